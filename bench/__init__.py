"""bench: kexpand's measuring stage. Reads kernel-build's trees and builds,
writes results/; knows nothing of report.py or plots/.

  kexpand.py   the entry point (puts the packages on sys.path)
  cli.py       the command line: main(argv)
  results.py   the results/ contract: records, shapes, directory names, CSV
  verdict.py   is a difference in compile cost significant (A/A noise, Welch)
  history.py   make track's noise model and interesting changes
  cmd/         the commands, one module each: prepare, bench, boot, compare,
               bisection, scan, sweep, check (with checkdetail: the files
               that regressed, patch by patch), checkbench (make
               bench-check), track, analyzer (make bench-analyzer), and
               inputs (what a command measures, checked before any work)
  measure/     the measuring engine: cache, expansion (the analyzer pipe),
               point (one commit and the loop over commits), cost, timing
               (hyperfine), icount (instruction counts), macros,
               changed_lines, scanfiles (a build's C files), dist (Dask
               scans), seriescheck (make check's sides), trackdist (make
               track on Dask)
  tools/       the native tools: kx-analyze.c, kx-macros.c (+ kx-srcmap),
               kx-macrostack.cpp (+ kx-stacks.h), kx-icount.c (QEMU plugin), kx-icount-wrap,
               kx-cc.c (+ kx-ccargs.h, kx-elf.h: a scan's compiler wrapper)"""
