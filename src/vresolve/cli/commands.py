"""One function per command: inputs from :mod:`.args`, results from the pure layers, output through
:mod:`vresolve.render`. :mod:`.dispatch` names them; :mod:`.run` maps errors to exit codes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import EXIT_NO_STACK, EXIT_OK, UsageError
from .args import _load, _opt, build_parser, command_of, kept_auto_plan, plan_inputs
from .common import check_output_dir, new_console, print_json, shown
from .shared import shared_call

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def _exports(env: Sequence[tuple[str, str]], shell: Any) -> str:
    """The exports in ``--shell``'s dialect; a value the dialect cannot hold is a usage error."""
    from ..render.shell import exports_text

    try:
        return exports_text(env, shell)
    except ValueError as e:
        raise UsageError(f"--shell {shell}: {e}; use --shell bash or fish") from None


def cmd_plan(args: argparse.Namespace) -> int:
    detected, kept = kept_auto_plan(args)  # before the matrix, the resolver and the renderers are imported
    if kept is not None:
        return kept
    from ..plan import build_plan
    from ..render import envelope, error_human, plan_error_view, plan_human, plan_view
    from ..render.shell import escape_controls
    from ..resolve import NoCompatibleStack, alternatives

    m, host, request, detected_by = plan_inputs(args, detected)
    try:
        res, into = _wheel_resolution(args, m, host, request, detected_by)
    except NoCompatibleStack as e:
        if _opt(args, "json"):
            print_json(envelope("plan", plan_error_view(e)))
        else:
            print(escape_controls(error_human(e), lines=True), file=sys.stderr)
        return e.exit_code
    if res is None:  # a source plan was printed
        return EXIT_OK
    # res: the shared resolution of (host, request), kept alive with it, so its id names it while sharing lasts
    others = shared_call(("alternatives", m.revision, host, request, id(res)),
                         lambda: alternatives(host, m, request, res)) if into is None else ()
    plan = build_plan(m, res, installer=args.installer, env_dir=args.venv, into=into, alternatives=others)
    if args.shell:
        sys.stdout.write(_exports(plan.env, args.shell))
        return EXIT_OK
    if _opt(args, "json"):
        print_json(envelope("plan", plan_view(plan, detected_by)))
        return EXIT_OK
    from .._proc import uv_command  # subprocess: not for --json

    if _opt(args, "quiet"):
        from ..render.shell import plan_commands

        sys.stdout.write(plan_commands(plan, uv_command()))
        return EXIT_OK
    console = new_console()
    # apply makes new environments only: an install into this one (--keep-torch) is the user's to run
    for item in plan_human(plan, detected_by, uv=uv_command(), apply=_apply_flags(args) if into is None else None):
        console.print(item)
    return EXIT_OK


def _apply_flags(args: argparse.Namespace) -> tuple[str, ...]:
    """The words of this command line but its command: ``vresolve apply`` with them runs the same plan."""
    argv = list(getattr(args, "argv", ()))
    command = command_of(argv)
    if command is not None:
        argv.remove(command)  # the first word that is a command is the command (command_of)
    return tuple(argv)


def _wheel_resolution(args: argparse.Namespace, m: Any, host: Any, request: Any, detected_by: str
                      ) -> tuple[Any, str | None]:
    """(the wheel stack, the interpreter to install into or None for a fresh environment); (None, None)
    after printing a source plan, which is the answer when no wheel fits or a build is asked for."""
    from ..resolve import NoCompatibleStack, resolve, resolve_kept_torch

    if args.keep_torch and not args.precompiled:
        # a wheel that pins exactly the kept torch, built for its CUDA major, installs into this
        # environment and keeps that torch: no hour-long build of what the wheel already is
        try:
            return resolve_kept_torch(host, m, request), host.python_executable or sys.executable
        except NoCompatibleStack as e:
            if host.installed_dist("torch") is None:
                raise
            _print_source_plan(args, m, host, request, detected_by, [f"{e.headline}: building from source"])
            return None, None
    if args.source_build == "always" or args.precompiled:
        _print_source_plan(args, m, host, request, detected_by, ())
        return None, None
    try:
        return shared_call(("resolve", m.revision, host, request), lambda: resolve(host, m, request)), None
    except NoCompatibleStack as e:
        # auto: no wheel covers the GPU (or the platform): a source build may
        no_wheel = args.source_build == "auto" and (request.cpu or bool({"gpu", "platform"} & e.cause_kinds))
        if not no_wheel:
            raise
        try:
            _print_source_plan(args, m, host, request, detected_by,
                               [f"no prebuilt wheel fits ({e.headline}): building from source"])
        except NoCompatibleStack as src:
            raise NoCompatibleStack(e.headline, causes=[*e.cause_list, *src.cause_list],
                                    hints=[h for h in e.hints if "source" not in h] + list(src.hints)) from None
        return None, None


def _print_source_plan(args: argparse.Namespace, m: Any, host: Any, request: Any, detected_by: str,
                       why_no_wheel: Sequence[str]) -> int:
    from ..plan.source import plan_source_build
    from ..render import source_plan_human, source_plan_view
    from ..render.shell import render_script

    sp = shared_call(("source", m.revision, host, request, args.keep_torch, args.installer, args.venv, args.src_dir,
                      tuple(why_no_wheel), args.precompiled),
                     lambda: plan_source_build(host, m, request, keep_torch=args.keep_torch, installer=args.installer,
                                               env_dir=args.venv, src_dir=args.src_dir, why_no_wheel=why_no_wheel,
                                               precompiled=args.precompiled))
    return _print_recipe(args, sp, (source_plan_view, source_plan_human, render_script), detected_by)


def _print_recipe(args: argparse.Namespace, p: Any, renderers: tuple[Any, Any, Any], detected_by: str) -> int:
    """A source build printed with its script: exports, JSON, the script alone
    (``-q``) or the human view; ``renderers``: (its JSON view, its human view, its script)."""
    from ..render import envelope

    view, human, script = renderers
    if args.shell:
        sys.stdout.write(_exports(p.env, args.shell))
    elif _opt(args, "json"):
        print_json(envelope("plan", view(p, detected_by)))
    elif _opt(args, "quiet"):
        sys.stdout.write(script(p) + "\n")
    else:
        from .._proc import uv_command

        # as for a wheel plan: apply refuses --keep-torch (a build into this environment is the recipe's to run)
        flags = None if args.keep_torch else _apply_flags(args)
        console = new_console()
        for item in human(p, detected_by, uv=uv_command(), apply=flags):
            console.print(item)
    return EXIT_OK


def cmd_lock(args: argparse.Namespace) -> int:
    from ..lock import FILE_NAMES, FORMATS
    from ..render import envelope

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise UsageError(f"--format: unknown format {', '.join(bad) or '(none)'} (expected any of: {', '.join(FORMATS)})")
    if args.source_build == "always" or args.keep_torch or args.precompiled:
        raise UsageError("vresolve lock locks wheel plans, not source builds (plan them with vresolve plan)")
    jobs = _lock_jobs(args)
    for _, _, dir_ in jobs:
        check_output_dir(dir_, writing=not args.check)
    _refuse_foreign(args, jobs, formats)
    report = [_lock_one(args, name, a, dir_, formats) for name, a, dir_ in jobs]
    stale_all = [s for item in report for s in item.get("stale", ())]
    if _opt(args, "json"):
        print_json(envelope("lock", {"locks": report, "check": bool(args.check), "up_to_date": not stale_all}))
    else:
        for item in report:
            what = (", ".join(item.get("stale") or []) or "up to date") if args.check else \
                ", ".join(FILE_NAMES[f] for f in formats)
            stack = item["stack"]
            print(f"{item['name'] + ': ' if item['name'] else ''}vLLM {stack['vllm']} + torch {stack['torch']}"
                  f"+{stack['variant']}: {item['packages']} packages ({item['uv_seconds']} s in uv) -> "
                  f"{item['dir']}: {what}")
    return 1 if stale_all else EXIT_OK


def _refuse_foreign(args: argparse.Namespace, jobs: list[tuple[str, argparse.Namespace, Path]],
                    formats: list[str]) -> None:
    """``lock`` never replaces a file it did not write (without ``--force``): checked before uv runs."""
    from ..lock import foreign_files, foreign_message

    if args.check or args.force:
        return
    found = [f for _, _, dir_ in jobs for f in foreign_files(dir_, formats)]
    if found:
        raise UsageError(f"lock: {foreign_message(found)}")


_PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"  # a directory name: no separator, no '..', no leading '.'


def _lock_jobs(args: argparse.Namespace) -> list[tuple[str, argparse.Namespace, Path]]:
    """(profile name, its flags, its directory): one job, or one per profile of ``--profiles FILE``.

    Every profile is checked before any is locked: its name is a plain directory name below ``-o``, its
    flags split as a shell would and parse as plan flags (help and version flags refused)."""
    from pathlib import Path

    out = Path(args.output)
    if not args.profiles:
        return [("", args, out)]
    import re
    import shlex

    import yaml

    from .._bounded import InputLimit, read_path_bounded

    where = f"--profiles: {shown(args.profiles, 200)}"
    try:  # a few lines of profiles: 1 MiB is far past any, and a stream must end within a minute
        profiles = yaml.safe_load(read_path_bounded(args.profiles, 1 << 20, 60.0).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, InputLimit) as e:
        raise UsageError(f"{where}: cannot read it ({' '.join(str(e).split())[:200]})") from None
    except RecursionError:  # YAML's reader recurses once per level: a hostile file nests thousands deep
        raise UsageError(f"{where}: nested too deeply (expected a mapping of profile name to plan flags)") from None
    if not isinstance(profiles, dict) or not profiles or not all(isinstance(v, str) for v in profiles.values()):
        raise UsageError(f"{where}: expected a mapping of profile name to plan flags")
    parser = build_parser("lock", profile=True)
    jobs = []
    for name, flags in profiles.items():
        if not isinstance(name, str) or not re.fullmatch(_PROFILE_NAME, name) or ".." in name:
            raise UsageError(f"{where}: invalid profile name {shown(str(name))} (expected a directory name of "
                             "letters, digits, '.', '_' and '-', starting with a letter or digit)")
        try:
            sub_args = parser.parse_args(["lock", *shlex.split(flags)])
        except (ValueError, UsageError) as e:  # shlex: "No closing quotation", "No escaped character"
            raise UsageError(f"{where}: profile {name!r}: {e}") from None
        sub_args.matrix = _opt(args, "matrix")
        jobs.append((name, sub_args, out / name))
    return jobs


def _lock_one(args: argparse.Namespace, name: str, a: argparse.Namespace, dir_: Path, formats: list[str]
              ) -> dict[str, Any]:
    """One lock: resolved, compiled by uv, then written (or checked against what is in ``dir_``)."""
    from ..lock import check_lock, compile_lock, write_lock
    from ..plan import build_plan
    from ..resolve import NoCompatibleStack, resolve

    m, host, request, _ = plan_inputs(a)
    try:
        res = resolve(host, m, request)
    except NoCompatibleStack as e:
        raise UsageError(f"{name + ': ' if name else ''}no stack to lock: {e.headline}") from None
    plan = build_plan(m, res, installer=a.installer, env_dir=a.venv)
    if not plan.lockable:
        raise UsageError(f"{name + ': ' if name else ''}no lock for a Jetson's wheels: the Jetson index has replaced "
                         "files under the same name, so hashes recorded now may not install later; the plan "
                         "(vresolve plan with --jetson-index) pins every package by version, and its recipe is "
                         "the record")
    quiet = _opt(args, "json") or _opt(args, "quiet")
    progress = None if quiet else (lambda msg, n=name: print(f"{n + ': ' if n else ''}{msg}", file=sys.stderr,
                                                             flush=True))
    lock = compile_lock(plan, m, index_url=args.index_url, offline=args.offline, timeout=args.timeout,
                        progress=progress)
    entry: dict[str, Any] = {"name": name or None, "dir": str(dir_), "packages": lock.packages,
                             "uv_seconds": round(lock.uv_seconds, 2), "stack": lock.header["stack"],
                             "glibc": lock.header["machine"]["glibc"], "glibc_note": lock.glibc_note}
    if lock.glibc_note and not _opt(args, "quiet"):
        print(f"{name + ': ' if name else ''}{lock.glibc_note}", file=sys.stderr, flush=True)
    if args.check:
        entry["stale"] = check_lock(lock, dir_, formats)
    else:
        entry["files"] = [str(p) for p in write_lock(lock, dir_, formats, force=args.force)]
    return entry


def cmd_detect(args: argparse.Namespace) -> int:
    from msgspec.structs import replace

    from ..detect import Overrides, detect_host, fill_capabilities, probe_torch
    from ..errors import EXIT_DETECTION
    from ..render import detect_human, envelope

    o = Overrides.from_env()
    o = replace(o, smi_timeout=args.timeout, nvidia_smi=args.nvidia_smi or o.nvidia_smi)
    host = detect_host(o)
    if any(g.compute_capability is None for g in host.gpus):  # the matrix only for a GPU no probe gave one
        host = fill_capabilities(host, _load(args))
    if args.torch:
        host = replace(host, torch_runtime=probe_torch(host.python_executable))
    if _opt(args, "json"):
        print_json(envelope("detect", {"host": host.to_dict()}))
    else:
        new_console().print(detect_human(host))
    if args.require_gpu and host.driver.broken:
        from ..render.shell import escape_controls

        what = ("NVIDIA GPUs without a driver" if host.driver.state == "not-installed" else
                "the NVIDIA driver is installed but not working")
        print(f"vresolve: error: {what} (--require-gpu): {escape_controls(host.driver.failure or '', lines=True)}",
              file=sys.stderr)
        return EXIT_DETECTION
    if args.require_gpu and not host.gpus:
        print("vresolve: error: no NVIDIA GPU found (--require-gpu)", file=sys.stderr)
        return EXIT_DETECTION
    return EXIT_OK


def cmd_matrix_validate(args: argparse.Namespace) -> int:
    from ..matrix import load_matrix
    from ..matrix.checks import awaiting_review
    from ..render import envelope, matrix_summary_view

    m = load_matrix(_opt(args, "matrix"), cache=False)  # always the YAML itself: never answered from the cache
    from ..doctor.judge import row_problems
    from ..errors import MatrixError
    from ..matrix.likely import likely_problems

    problems = row_problems(m) + likely_problems(m.path)  # rows and doctor's predicates name each other; base rates
    if problems:
        raise MatrixError(problems)

    summary = matrix_summary_view(m)
    review = awaiting_review(m)
    if _opt(args, "json"):
        print_json(envelope("matrix.validate", {"valid": True, "awaiting_review": review, **summary}))
    else:
        counts = ", ".join(f"{k} {v['rows']}" + (f" (+{v['index_wheels']} index wheel sets)" if v.get("index_wheels")
                                                   else "") for k, v in summary["tables"].items())
        if not _opt(args, "quiet"):
            print(f"matrix OK: {m.path} (revision {m.revision}): {counts}")
            _print_review(review)
    return EXIT_OK


def _print_review(review: list[dict[str, Any]]) -> None:
    """The unverified release rows, one line each, with what they carry (they pass: they await a review)."""
    if not review:
        return
    print(f"{len(review)} release row{'s' if len(review) != 1 else ''} awaiting review (verified: unverified; "
          "the resolver uses them only when nothing verified fits, with a warning):")
    for r in review:
        carried = (f": {', '.join(r['carried'])} carried from {r['carried_from']}" if r["carried_from"] is not None
                   else "")
        print(f"  {r['file']} {r['version']}{carried}")


def cmd_matrix_show(args: argparse.Namespace) -> int:
    m = _load(args)
    from ..render import envelope, matrix_summary_view, matrix_table_human, matrix_table_view

    table = _opt(args, "table")
    if _opt(args, "json"):
        body = ({"table": table, "rows": matrix_table_view(m, table)} if table
                else matrix_summary_view(m))
        print_json(envelope(f"matrix.{table or 'summary'}", {"revision": m.revision, **body}))
        return EXIT_OK
    if table is None:
        summary = matrix_summary_view(m)
        print(f"matrix {summary['path']} (revision {summary['revision']})")
        for name, t in summary["tables"].items():
            extra = "".join(f", {k} {v}" for k, v in t.items() if k not in ("rows", "verified"))
            levels = ", ".join(f"{k} {v}" for k, v in t["verified"].items())
            print(f"  {name:7} {t['rows']:4} rows{extra}  (verified: {levels})")
        return EXIT_OK
    new_console().print(matrix_table_human(m, table))
    return EXIT_OK


def _pinned_by_vllm(root: Path, package: str) -> set[Any]:
    """The releases of a companion that some vLLM wheel pins exactly (read from wheels/vllm.yaml)."""
    import yaml
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from ..values import exact_pin

    doc = yaml.safe_load((root / "wheels" / "vllm.yaml").read_text()) or {}
    out = set()
    for r in doc.get("releases") or ():
        for w in r.get("wheels") or ():
            try:
                pin = exact_pin(SpecifierSet(str((w.get("requires") or {}).get(package, ""))))
            except InvalidSpecifier:
                continue
            if pin is not None:
                out.add(pin)
    return out


def cmd_matrix_refresh(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.text import Text

    from .._cache import cache_dir, usable_cache_dir
    from ..index import IndexClient, configured_index_url, redacted
    from ..matrix import default_matrix_path
    from ..refresh import apply_files, diff_files, unseen_rows
    from ..render import envelope
    from ..render.shell import escape_controls

    root = Path(_opt(args, "matrix") or default_matrix_path())
    url, origin = configured_index_url(args.index_url)
    since = _since(args.since)
    cdir = usable_cache_dir() if not args.offline else cache_dir()
    client = IndexClient(url, cache_dir=Path(cdir) / "index" if cdir else None, offline=args.offline,
                         timeout=args.timeout)
    quiet = _opt(args, "json") or _opt(args, "quiet")
    err = new_console(stderr=True)
    if not quiet:  # the index as the user named it, less any user:password
        err.print(Text(escape_controls(f"index: {redacted(url)} (from {origin})"
                                       f"{', offline: from the cache' if args.offline else ''}")), soft_wrap=True)
    new = _generated(args, root, client, since, err, bool(quiet))
    new.update(unseen_rows(root, new))  # a row, unverified, for each release vllm.yaml / torch.yaml have not seen
    variant_report, compared = _torch_variant_report(args, root, client) if args.torch_variants else ([], True)
    diffs = {}
    for name, text in new.items():
        path = root / name
        d = diff_files(path.read_text(encoding="utf-8") if path.exists() else "", text, name)
        if d:
            diffs[name] = d
    if args.apply:  # all or nothing, and only a matrix that validates
        apply_files(root, {name: new[name] for name in diffs})
    if _opt(args, "json"):
        print_json(envelope("matrix.refresh", {"index": redacted(url), "index_from": origin,
                                                "requests": client.requests, "cache_hits": client.cache_hits,
                                                "changes": diffs, "applied": bool(args.apply),
                                                "torch_variants": variant_report}))
    else:
        for d in diffs.values():
            sys.stdout.write(d)
        for line in variant_report:  # index text: no markup, no controls; one line each, never wrapped
            err.print(Text(escape_controls(line), style="yellow"), soft_wrap=True)
        state = "written" if args.apply else "not written (use --apply)"
        rows = [n for n in ("vllm.yaml", "torch.yaml") if n in diffs]
        if rows:  # rows for releases the curated files had not seen: marked unverified, listed by validate
            err.print(f"{' and '.join(rows)}: new release rows marked unverified, with facts carried from the "
                      "previous release (`vresolve matrix validate` lists them for review)", soft_wrap=True)
        err.print(f"{len(diffs)} file(s) changed, {state}; {client.requests} HTTP requests, "
                  f"{client.cache_hits} answers from the cache")
    return EXIT_OK if compared else EXIT_NO_STACK  # --torch-variants: no variant index answered


def _since(text: str | None) -> Any:
    if not text:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        if len(text) > 64:
            raise InvalidVersion(text)
        return Version(text)
    except InvalidVersion:
        raise UsageError(f"--since: invalid version {shown(text)} (expected e.g. '0.30.0')") from None


def _generated(args: argparse.Namespace, root: Path, client: Any, since: Any, err: Any, quiet: bool
               ) -> dict[str, str]:
    """Each package's ``wheels/<package>.yaml`` as the index answers it now (file name -> text)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..refresh import PACKAGES, generate, merge_since, render_wheels_doc

    new: dict[str, str] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=quiet, transient=False) as bar:
        for pkg in args.package or list(PACKAGES):
            task = bar.add_task(f"{pkg}: METADATA", total=None)

            def progress(p: str, done: int, total: int, task: Any = task) -> None:
                bar.update(task, completed=done, total=total)

            versions = _pinned_by_vllm(root, pkg) if pkg in ("xformers", "flashinfer-python") else None
            doc = generate(client, pkg, workers=args.workers, progress=progress, versions=versions, since=since)
            path = root / f"wheels/{pkg}.yaml"
            if since is not None and path.exists():
                import yaml

                doc = merge_since(yaml.safe_load(path.read_text()) or {}, doc, since)
            new[f"wheels/{pkg}.yaml"] = render_wheels_doc(doc)
    return new


def _torch_variant_report(args: argparse.Namespace, root: Path, client: Any) -> tuple[list[str], bool]:
    """``--torch-variants``: where PyTorch's index and torch.yaml disagree on a release's variants; and
    whether any variant index answered (False: nothing was compared)."""
    from ..index import IndexClient
    from ..matrix import load_matrix
    from ..refresh import torch_index_variants

    m = load_matrix(root)
    wanted = sorted({v.variant for t in m.torch for v in t.variants})
    found, problems = torch_index_variants(m.torch_index, wanted, lambda u: IndexClient(
        u, cache_dir=client.cache, offline=args.offline, timeout=args.timeout, retries=1))
    report = _variant_failures(m.torch_index, problems)
    for t in m.torch:
        on_index = found.get(str(t.version), set())
        listed = {v.variant for v in t.variants}
        if on_index and on_index != listed:
            report.append(f"torch {t.version}: index has {sorted(on_index)}, torch.yaml lists "
                          f"{sorted(listed)} (review torch.yaml)")
    return report, not wanted or len(problems) < len(wanted)


def _variant_failures(base: str, problems: list[str]) -> list[str]:
    """One line per way PyTorch's variant indexes failed (``variant: URL: what failed`` each), naming them all."""
    by_failure: dict[str, list[tuple[str, str]]] = {}
    for p in problems:
        variant, _, rest = p.partition(": ")
        url, _, failure = rest.partition(": ")
        by_failure.setdefault(failure or rest, []).append((variant, url))
    lines = []
    for failure, failed in by_failure.items():
        where = failed[0][1] if len(failed) == 1 else (
            f"{base.rstrip('/')}/<variant>/torch/ for {', '.join(v for v, _ in failed)}")
        lines.append(f"PyTorch index {where}: {failure}")
    return lines


def cmd_completion(args: argparse.Namespace) -> int:
    from ..render.completion import completion_script

    script = completion_script(build_parser("*"), args.shell)
    if _opt(args, "json"):
        from ..render import envelope

        print_json(envelope("completion", {"shell": args.shell, "script": script}))
    else:
        sys.stdout.write(script)
    return EXIT_OK


