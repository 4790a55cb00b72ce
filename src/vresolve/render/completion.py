"""Shell completion scripts, generated from the argparse parser: bash and zsh by shtab, fish here (shtab has
no fish; fish's ``complete`` lines are simple enough to write from the parser's actions)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from .shell import fish_quote


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser``'s program for ``shell`` (bash, zsh or fish)."""
    if shell == "fish":
        return fish_completion(parser)
    import shtab

    return str(shtab.complete(parser, shell=shell))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """The parser's subcommands: name -> (its parser, its help)."""
    out: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in a._choices_actions}
            for name, sub in a.choices.items():
                out[name] = (sub, helps.get(name, ""))
    return out


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("%%", "%")


def _option_lines(parser: argparse.ArgumentParser, cond: str) -> Iterator[str]:
    """``complete`` lines for the options and positional choices of one (sub)command."""
    for a in parser._actions:
        if a.help == argparse.SUPPRESS or isinstance(a, argparse._SubParsersAction):
            continue
        parts = ["complete -c vresolve"] + (["-n", fish_quote(cond)] if cond else [])
        if a.option_strings:
            for o in a.option_strings:
                parts += ["-l", o[2:]] if o.startswith("--") else ["-s", o[1:]]
            if a.nargs != 0:
                parts += ["-r"] if a.choices else ["-r", "-F"]  # a value: one of its choices, else a path
        elif not a.choices:
            continue
        if a.choices:
            parts += ["-f", "-a", fish_quote(" ".join(map(str, a.choices)))]
        if a.help:
            parts += ["-d", fish_quote(_one_line(a.help)[:120])]
        yield " ".join(parts)


def fish_completion(parser: argparse.ArgumentParser, prog: str = "vresolve") -> str:
    """fish ``complete`` lines for every command, action and option of ``parser``."""
    lines = [f"# fish completion for {prog}, generated from its argument parser", f"complete -c {prog} -f"]
    lines += _option_lines(parser, "__fish_use_subcommand")
    for name, (sub, help_text) in _subparsers(parser).items():
        lines.append(f"complete -c {prog} -n __fish_use_subcommand -a {fish_quote(name)} "
                     f"-d {fish_quote(_one_line(help_text))}")
        seen = f"__fish_seen_subcommand_from {name}"
        actions = _subparsers(sub)
        if not actions:
            lines += _option_lines(sub, seen)
            continue
        none_yet = f"{seen}; and not __fish_seen_subcommand_from {' '.join(actions)}"
        for action, (asub, ahelp) in actions.items():
            lines.append(f"complete -c {prog} -n {fish_quote(none_yet)} -a {fish_quote(action)} "
                         f"-d {fish_quote(_one_line(ahelp))}")
            lines += _option_lines(asub, f"{seen}; and __fish_seen_subcommand_from {action}")
    return "\n".join(lines) + "\n"
