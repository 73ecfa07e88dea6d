"""The e2e scripts' work folders: a script that passes or skips leaves
nothing behind in the temporary directory; one that fails keeps its files
and names the folder, so that the failure can be looked into.

    return workdir.run_in(lambda work: check(args, work),
                          "remat-parity-", given=args.workdir)
"""
import os
import shutil
import sys
import tempfile

SKIP = 77  # ctest's SKIP_RETURN_CODE in tests/CMakeLists.txt


def exit_code(e):
    """The exit code a SystemExit `e` ends the process with."""
    if e.code is None:
        return 0
    return e.code if isinstance(e.code, int) else 1


def finish(work, passed):
    """Removes `work` when `passed`, else says where its files are."""
    if passed:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"the work files are kept in {work}", flush=True)
        sys.stderr.flush()


def run_in(body, prefix, given=None):
    """body(work)'s exit code, `work` being the folder `given` (created if
    missing, never removed: the caller asked for it) or a new one named
    `prefix` + a random suffix, removed unless body failed (an exit code
    other than 0 and SKIP, an exception, or sys.exit with one)."""
    work = given or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(work, exist_ok=True)
    code = 1
    try:
        code = body(work)
    except SystemExit as e:
        code = exit_code(e)
        raise
    finally:
        if not given:
            finish(work, code in (0, SKIP))
    return code
