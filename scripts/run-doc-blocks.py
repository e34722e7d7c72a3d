#!/usr/bin/env python3
"""Runs the shell blocks of the pages a newcomer follows, in order, as a reader would type them.

    scripts/run-doc-blocks.py                    # every page below
    scripts/run-doc-blocks.py docs/tls.md        # only these pages
    scripts/run-doc-blocks.py --list             # the blocks and their marks, without running anything

Where: a scratch copy of the repository, .build/doc-run/EpollLoop (the files git tracks, as they are in the
working tree), so a page's commands start from what a fresh clone has; the packages a page has the reader
make (`../MyServer`) sit beside it. Before each page everything a block made there is removed, except the
`.build` directories, so builds are reused from one run to the next. The copy is named EpollLoop because a
reader's package depends on it as `.package(path: "../EpollLoop")`, whose identity is the folder's name.

How: each ```sh (or bash, shell) block is one `bash -e` script, run in the directory the page's previous
block ended in and with the variables it had exported, as a reader's terminal keeps them (a variable that
is not exported does not carry over, so a block sets its own). A block is bounded in time: 180 s, or
1,800 s when it runs `swift build` or `swift run` (a fresh release build of the package takes minutes).
It runs in a process group of its own, and anything it started and left running 10 s after it ended (a
server in the background that the block did not stop) fails it and is stopped: a block stops what it
starts.

Marks in a fence's info string:
    ```sh not-runnable: REASON      not run; counted and listed with its reason at the end
    ```swift file=PATH              written to PATH (relative to the page's current directory) when the page
                                    reaches it, for the blocks after it to build; scripts/check-docs.py still
                                    compiles the block unless it is also `no-compile`

Output blocks (a fence with no language) are not commands and are left alone; scripts/check-docs.py
checks the marks' spelling. Python 3 standard library
only; exit status 0 when every block that runs passes, 1 otherwise.
"""
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "docs/quick-start-porting.md", "docs/quick-start-embedding.md",
         "docs/quick-start-load-testing.md", "docs/tls.md", "docs/observability.md", "docs/loadtest.md"]
SCRATCH = ROOT / ".build" / "doc-run"
CLONE = SCRATCH / "EpollLoop"
LOGS = ROOT / ".build" / "doc-run-logs"
BOUND, BUILD_BOUND = 180, 1800

_spec = importlib.util.spec_from_file_location("check_docs", ROOT / "scripts" / "check-docs.py")
check_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs)


def blocks(page):
    """(kind, fence line, info string, text) for each block the runner cares about, in page order: kind
    'sh' for a shell block, 'file' for a ```swift file=PATH block."""
    for kind, info, start, lines in check_docs.split_blocks((ROOT / page).read_text(encoding="utf-8")):
        words = info.split()
        if kind != "code" or not words:
            continue
        if words[0] in check_docs.SHELLS:
            yield "sh", start - 1, info, "\n".join(lines) + "\n"
        elif any(w.startswith("file=") for w in words):
            yield "file", start - 1, info, "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# the scratch copy

def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


def reset_scratch(tracked):
    """Brings the copy to the working tree's tracked files and removes whatever blocks made, .build kept."""
    CLONE.mkdir(parents=True, exist_ok=True)
    wanted = {str(CLONE / p) for p in tracked}
    directories = []
    for directory, subdirectories, files in os.walk(SCRATCH):
        subdirectories[:] = [d for d in subdirectories if d != ".build"]  # builds are kept, and not walked
        links = [d for d in subdirectories if os.path.islink(os.path.join(directory, d))]
        for name in files + links:
            if os.path.join(directory, name) not in wanted:
                os.unlink(os.path.join(directory, name))
        directories.append(directory)
    for directory in reversed(directories):
        if directory != str(SCRATCH) and not os.listdir(directory):
            os.rmdir(directory)
    for p in tracked:
        source, copy = ROOT / p, CLONE / p
        data = source.read_bytes()
        if not copy.is_file() or copy.read_bytes() != data:  # untouched files keep their times: builds reuse
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
        mode = source.stat().st_mode & 0o777
        if copy.stat().st_mode & 0o777 != mode:
            copy.chmod(mode)


# ---------------------------------------------------------------------------------------------------------
# running one block

def group_members(pgid):
    """(pid, command line) of the processes still in process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) != pgid or fields[0] == "Z":
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            found.append((int(entry.name), cmd or stat[stat.index("(") + 1:stat.rindex(")")]))
        except (OSError, ValueError, IndexError):
            continue
    return found


def stop_group(pgid):
    """SIGTERM to the group, SIGKILL 5 s later to what is left."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.1)
        if not group_members(pgid):
            return


def run_block(text, cwd, env, log_path):
    """Runs `text`; (problem or None, seconds, the directory it ended in, the environment it exported)."""
    bound = BUILD_BOUND if re.search(r"\bswift (build|run)\b", text) else BOUND
    cwd_file, env_file = log_path.with_suffix(".cwd"), log_path.with_suffix(".env")
    cwd_file.unlink(missing_ok=True)
    env_file.unlink(missing_ok=True)
    script = f"trap 'pwd > {str(cwd_file)!r}; env -0 > {str(env_file)!r}' EXIT\n{text}"
    started = time.monotonic()
    with open(log_path, "w") as log:
        child = subprocess.Popen(["bash", "-e", "-c", script], cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True, env=env)
        problem = None
        try:
            status = child.wait(timeout=bound)
            if status != 0:
                problem = f"exited with status {status}"
        except subprocess.TimeoutExpired:
            problem = f"did not finish within {bound} s"
        # A server the block stopped as it ended is let finish (10 s); a block that timed out gets no grace.
        deadline = time.monotonic() + (10 if child.poll() is not None else 0)
        while group_members(child.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = group_members(child.pid)
        if left and problem is None:
            problem = "left running: " + "; ".join(f"{cmd} (pid {pid})" for pid, cmd in left)
        stop_group(child.pid)
        child.wait()
    ended = Path(cwd_file.read_text().strip()) if cwd_file.is_file() else cwd
    if env_file.is_file():
        pairs = (entry.split("=", 1) for entry in env_file.read_text(errors="replace").split("\0") if "=" in entry)
        env = {key: value for key, value in pairs if key not in ("PWD", "OLDPWD", "SHLVL", "_")}
    return problem, time.monotonic() - started, ended, env


def run_page(page, tracked):
    """Runs one page's blocks; (ran, failures, marks)."""
    reset_scratch(tracked)
    cwd, ran, failures, marks = CLONE, 0, [], []
    env = {key: value for key, value in os.environ.items() if key != "CDPATH"}
    for kind, line, info, text in blocks(page):
        where = f"{page}:{line}"
        if kind == "file":
            target = next(w for w in info.split() if w.startswith("file="))[len("file="):]
            (cwd / target).parent.mkdir(parents=True, exist_ok=True)
            (cwd / target).write_text(text)
            continue
        reason = check_docs.not_runnable(info)
        if reason is not None:
            marks.append((where, reason))
            continue
        log = LOGS / (re.sub(r"\W", "_", page) + f"_{line}.log")
        problem, seconds, cwd, env = run_block(text, cwd, env, log)
        ran += 1
        print(f"  {where}: {'ok' if problem is None else 'FAILED'} in {seconds:.1f} s", flush=True)
        if problem is not None:
            tail = log.read_text(errors="replace").splitlines()[-25:]
            failures.append(f"{where}: {problem}\n" + "\n".join("      " + l for l in tail))
    return ran, failures, marks


def main(argv):
    listing = "--list" in argv
    pages = [a for a in argv if a != "--list"] or PAGES
    unknown = [p for p in pages if not (ROOT / p).is_file()]
    if unknown:
        print(f"no such page: {unknown[0]}", file=sys.stderr)
        return 2
    if listing:
        for page in pages:
            for kind, line, info, text in blocks(page):
                if kind == "sh":
                    reason = check_docs.not_runnable(info)
                    print(f"{page}:{line}: " + ("runs" if reason is None else f"not runnable: {reason}"))
        return 0
    LOGS.mkdir(parents=True, exist_ok=True)
    tracked = tracked_files()
    started = time.monotonic()
    ran, failures, marks = 0, [], []
    for page in pages:
        print(f"{page}:", flush=True)
        r, f, m = run_page(page, tracked)
        ran, failures, marks = ran + r, failures + f, marks + m
    reset_scratch(tracked)
    unexplained = [where for where, reason in marks if not reason]
    print(f"not runnable, as marked ({len(marks)}):")
    for where, reason in marks:
        print(f"  {where}: {reason or 'NO REASON GIVEN'}")
    for failure in failures:
        print("FAILED " + failure)
    for where in unexplained:
        print(f"FAILED {where}: `not-runnable:` needs a reason")
    print(f"doc blocks: {ran} run, {len(failures)} failed, {len(marks)} marked not runnable, "
          f"in {time.monotonic() - started:.0f} s")
    return 1 if failures or unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
