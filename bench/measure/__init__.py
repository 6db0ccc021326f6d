"""The measuring engine, below the commands: the cache, a file's expansion,
one commit's measurements and the loop over commits, compile cost (timing
with hyperfine, instruction counts), macro attribution, changed lines,
the files of a scan and their distribution on Dask."""
