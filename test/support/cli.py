"""A command run in this process: its exit status, stdout and stderr, as a process would give them.

The quick suite calls the entry points' `main` here instead of starting an interpreter per command (a
process start costs seconds of imports); each entry point keeps one test that starts the real process
(marked `slow`).

    done = radarays("cast", world, "--rays", rays, "--out", out)
    done.returncode, done.stdout, done.stderr
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Done:
    """What subprocess.run(..., capture_output=True, text=True) would return."""

    returncode: int
    stdout: str
    stderr: str


def run_main(main: Callable[[list[str]], int], args, cwd=None) -> Done:
    """main(args) with stdout and stderr captured; a SystemExit (argparse's usage errors, --help) gives its
    status as the interpreter would: None 0, an int itself, anything else printed to stderr and 1."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
                    code = 1
    finally:
        os.chdir(here)
    return Done(int(code or 0), out.getvalue(), err.getvalue())


def radarays(*args, cwd=None) -> Done:
    """`radarays ARGS...` (radarays_ros.cli.main) in this process."""
    from radarays_ros.cli import main

    return run_main(main, args, cwd)
