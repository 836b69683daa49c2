"""The services every package uses: the error classes and exit codes, the one atomic writer, the
collectives, tracing, progress display, process pools, manifests, keyword hand-over and the `--out`
guard. Leaves: they import nothing of PECAN's outside this package."""
