"""bench: kexpand's measuring stage. Reads kernel-build's trees and builds,
writes results/; knows nothing of compare.py or plots/.

  cli       the command line (main(argv))
  points    what a command measures, checked up front; the measuring loop
  engine    one (commit, compiler): analyzer pipe, hyperfine, the cache
  stages    prepare, bench, boot, conformance, compare, analyzer-bench
  bisection git bisect run on a file's expansion bytes
  scan      every C file of a full build through the analyzer
  timing    hyperfine + GNU time, the noise judgement
  stats     statistics on raw samples
  results   the results/ contract: records, shapes, summary.csv"""
