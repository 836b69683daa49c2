"""`pecan config CONFIG [--set section.key=value ...]`: print the resolved config (YAML, overrides and
environment folded in, checked as a run would check it); `pecan config --keys`: every key with its type,
default and documentation."""

from __future__ import annotations

import argparse
import textwrap

from pecan.commands import add_set_option


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", help="YAML run config to resolve")
    add_set_option(parser)
    parser.add_argument("--keys", action="store_true", help="list every key with its type, default and meaning")
    args = parser.parse_args(argv)
    if args.keys == bool(args.config):
        parser.error("give a CONFIG to resolve, or --keys")
    return args


def key_listing() -> str:
    """Every config key: a line with key, type and default, then its documentation indented."""
    from pecan.config.docs import reference_rows

    blocks = []
    for key, variant, kind, default, doc in reference_rows():
        head = f"{key} ({variant} only)" if variant else key
        blocks.append(f"{head}: {kind} = {default}\n" + textwrap.indent(textwrap.fill(doc, 100), "    "))
    return "\n".join(blocks) + "\n"


def main(argv=None, prog: str | None = None) -> int:
    """Print the resolved config or the key reference; a bad config exits 2 naming the key."""
    args = parse_args(argv, prog)
    if args.keys:
        print(key_listing(), end="")
        return 0
    from pecan.engine.harness import invoke

    return invoke(lambda: show(args))  # ConfigError, or a value the loader rejects: exit 2


def show(args: argparse.Namespace) -> None:
    """Print the resolved config of ``args``."""
    import yaml

    from pecan import config as config_module

    config = config_module.load(args.config, args.overrides)
    print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
