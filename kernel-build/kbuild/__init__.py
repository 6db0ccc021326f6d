"""kbuild: kexpand's kernel-build stage, the most upstream code.

  util        errors and exit classes, processes, atomic writes, the lock
  settings    the one Request, read and validated up front
  series      cases (cases/<case>/series.toml) -> a git tree with a tag per point
  trees       a user's git tree (KERNEL=), read-only, through a shared clone
  build       configs, O= build dirs, builds with progress, Kbuild's .cmd files
  boot        bzImage + KUnit module + C /init -> QEMU -> parsed console
  conformance compile the case's C snippets with a point's exact flags

(The directory is kernel-build/, which Python cannot import: the package
inside it is kbuild.) Nothing here imports bench/, report.py or plots/."""
