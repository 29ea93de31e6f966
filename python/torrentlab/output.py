"""Writing results safely: torrentlab never deletes what it did not write.

A result directory carries a marker, ``manifest.json``, written last. Writing a
result goes through :func:`atomic_dir`:

1. Before any simulation, :func:`check_output` decides whether the destination
   may be written: it is refused when it is the working directory or one of
   its ancestors, a file, a symbolic link, a directory with anything in it
   that is not a torrentlab result, or a torrentlab result without ``force``;
   and when its parent cannot be created or written, or its file system is
   full. Every refusal is an :class:`OutputError` with one line saying why.
2. The new result is written into a hidden sibling, ``.<name>.partial``, held
   under an exclusive lock (``flock``) for as long as the writer lives. A
   second writer into the same place finds the lock held and is refused; a
   partial directory whose writer died (SIGKILL) is not locked and is removed
   by the next writer.
3. When the block ends without error, the destination is checked again and
   the partial directory is renamed into place (an older torrentlab result is
   moved aside to ``.<name>.old-<pid>`` first and removed after; one left by a
   writer killed in between is removed by the next writer). On any error or
   interrupt, the partial directory is removed and the destination is left as
   it was.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from torrentlab.exceptions import OutputError

if TYPE_CHECKING:  # pandas is imported when a table is read, not to start the CLI
    import pandas as pd

#: The marker file of a torrentlab result directory.
MANIFEST = "manifest.json"

#: Free space (bytes) below which a destination's file system counts as full.
MIN_FREE_BYTES = 16 * 1024 * 1024

#: A partial directory younger than this (s) without its lock file may be
#: another writer being born; older ones are left over from a killed writer.
_YOUNG_S = 10.0

_LOCK = ".lock"

# The process umask (read once: os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def is_result(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a directory torrentlab wrote (it holds the manifest)."""
    p = Path(path)
    return p.is_dir() and not p.is_symlink() and (p / MANIFEST).is_file()


def _partial(out: Path) -> Path:
    return out.parent / f".{out.name}.partial"


def _why(e: OSError) -> str:
    """A short reason for an OSError, in words."""
    return {
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.ENAMETOOLONG: "the name is too long",
        errno.ELOOP: "too many symbolic links",
    }.get(e.errno, e.strerror or str(e))


def _has_entries(directory: Path) -> bool:
    try:
        return any(directory.iterdir())
    except OSError as e:
        raise OutputError(directory, f"cannot be read: {_why(e)}") from None


def check_output(out_dir: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Checks that `out_dir` may receive a result, without writing anything
    but the missing parent directories. Returns the path; raises
    :class:`OutputError` with one line otherwise."""
    out = Path(out_dir)
    if str(out_dir) == "" or out.name in ("", ".", ".."):
        raise OutputError(out, "must name a directory of its own (not '.', '..' or empty)")
    try:
        here = Path.cwd().resolve()
        target = out.resolve()
    except OSError as e:
        raise OutputError(out, _why(e)) from None
    if target == here or target in here.parents:
        raise OutputError(out, "is the working directory or one of its parents; name a new directory for the result")
    if out.is_symlink():
        raise OutputError(out, "is a symbolic link; name the directory itself")
    if out.exists():
        if not out.is_dir():
            raise OutputError(out, "is a file, not a directory")
        if is_result(out):
            if not force:
                raise OutputError(out, "already holds a torrentlab result; use --force to replace it")
        elif _has_entries(out):
            raise OutputError(
                out,
                "exists and is not a torrentlab result (no manifest.json); torrentlab only replaces its own "
                "results: choose a new directory or empty this one yourself",
            )
    # The nearest existing ancestor must be a directory we may write into;
    # missing parents are created only when the result is written.
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        if parent.is_symlink():  # a dangling link
            raise OutputError(out, f"{parent} is a broken symbolic link")
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(out, f"{parent} is a file, not a directory")
    try:
        st = os.statvfs(parent)
    except OSError as e:
        raise OutputError(out, _why(e)) from None
    if st.f_flag & os.ST_RDONLY:
        raise OutputError(out, f"cannot write into {parent}: the file system is read-only")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(out, f"cannot write into {parent}: permission denied")
    free = st.f_bavail * st.f_frsize
    if free < MIN_FREE_BYTES:
        raise OutputError(out, f"cannot write into {parent}: only {free // 1024} KiB free on its file system")
    return out


def _claim(partial: Path, adopt: Callable[[Path], bool] | None = None) -> int:
    """Creates `partial` and locks it; returns the lock's file descriptor.
    A partial directory left by a writer that died is removed, or, when
    `adopt` says yes to it, kept and locked for this writer (a campaign's
    finished runs); one whose writer lives is refused."""
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(partial.parent, f"cannot create it: {_why(e)}") from None
    for _ in range(3):
        try:
            partial.mkdir()
        except FileExistsError:
            fd = _remove_stale(partial, adopt)
            if fd is not None:
                return fd
            continue
        except OSError as e:
            raise OutputError(partial.parent / partial.name[1:].removesuffix(".partial"), _why(e)) from None
        os.chmod(partial, 0o777 & ~_UMASK)
        fd = os.open(partial / _LOCK, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new: nobody else holds it
        os.write(fd, f"{os.getpid()}\n".encode())
        # An older result moved aside by a writer killed while swapping it out.
        name = partial.name.removesuffix(".partial")
        for old in partial.parent.glob(f"{glob.escape(name)}.old-*"):
            shutil.rmtree(old, ignore_errors=True)
        return fd
    raise _busy(partial)


def _busy(partial: Path) -> OutputError:
    out = partial.parent / partial.name[1:].removesuffix(".partial")
    return OutputError(
        out, "another torrentlab process is writing this result now; wait for it or use another directory")


def _remove_stale(partial: Path, adopt: Callable[[Path], bool] | None = None) -> int | None:
    """Removes `partial` if its writer is gone, or, if `adopt` says yes to
    it, keeps it and returns its lock, now held; raises `_busy` if its writer
    lives."""
    try:
        fd = os.open(partial / _LOCK, os.O_RDWR)
    except FileNotFoundError:
        # No lock file: a writer being born (young) or one killed at birth (old).
        try:
            age = time.time() - partial.stat().st_mtime
        except FileNotFoundError:
            return
        if age < _YOUNG_S:
            raise _busy(partial) from None
        shutil.rmtree(partial, ignore_errors=True)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _busy(partial) from None
    # Its writer is gone: the directory is ours to take over or remove.
    try:
        adopted = adopt is not None and adopt(partial)
    except BaseException:
        os.close(fd)
        raise
    if adopted:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd
    shutil.rmtree(partial, ignore_errors=True)
    os.close(fd)
    return None


def write_manifest(directory: Path, **fields: Any) -> None:
    """Writes the marker of a torrentlab result into `directory`: the version,
    the time, the files, and `fields` (what was run)."""
    from torrentlab import __git_commit__, __version__

    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    doc = {
        "torrentlab": __version__,
        "commit": __git_commit__,
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **fields,
        "files": [f for f in files if f not in (MANIFEST, _LOCK)],
    }
    (directory / MANIFEST).write_text(json.dumps(doc, indent=2, default=str) + "\n")


@contextmanager
def atomic_dir(out_dir: str | os.PathLike[str], *, force: bool = False, **manifest: Any) -> Iterator[Path]:
    """Yields an empty directory to write a result into. When the block ends
    without error, a manifest (with `manifest` fields) is added and the
    directory replaces `out_dir`; on error or interrupt it is removed and
    `out_dir` is left untouched. See the module's documentation for what is
    refused (:class:`OutputError`)."""
    out = check_output(out_dir, force=force)
    partial = _partial(out)
    fd = _claim(partial)
    try:
        yield partial
        publish(partial, out, force=force, **manifest)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        os.close(fd)


def publish(partial: Path, out: Path, *, force: bool, **manifest: Any) -> None:
    """Adds the manifest to the locked `partial` and renames it into place as
    `out` (an older result there is moved aside, then removed)."""
    write_manifest(partial, **manifest)
    # Checked again: the place may have changed while we ran.
    check_output(out, force=force)
    os.unlink(partial / _LOCK)  # the lock stays held through its descriptor until the rename is done
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    os.replace(partial, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_frame(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Writes a DataFrame as Parquet (zstd), without the index."""
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, compression="zstd")
