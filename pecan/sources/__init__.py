"""Readers that turn the field's training sets, as distributed, into `pecan redock` and `pecan convert`
manifests: PDBbind's folder (``pdbbind``), CrossDocked2020 in GNINA's types-file layout (``crossdocked``),
both behind the reserved-protein filter (``reserved``)."""
