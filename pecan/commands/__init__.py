"""The subcommands of the `pecan` command; each module has ``main(argv, prog) -> int`` with its own parser."""
