"""Atomic checkpoint writes: a temp file beside the target, fsynced, renamed over it.

A crash at any point leaves either the old file or the new one, never a mix.
Each temp file is named ``.<target name>.<pid>.<random>.tmp`` and is held under
an exclusive ``flock`` while its writer lives. A writer killed before its
rename (``kill -9``, power loss) leaves its temp file behind; the next save to
the same target removes the temp files whose writer is gone: the pid is not a
running process *and* the lock is free. Both must hold, so a live writer's file
is never touched, also from another pid namespace (a container sharing the
folder), where the pid alone could name another process. A temp file whose pid
was reused by a new process is kept until a save after that process ends.

Write protection: ``os.replace`` needs only the folder to be writable, so it
would replace a read-only checkpoint that ``open(path, "w")`` refuses. ``save``
refuses it as ``open()`` would: for an ordinary user, by ``os.access`` (mode
bits and ACLs, with the effective ids); for root, whom ``open()`` never refuses,
when the file has no write bit at all (``chmod a-w``, as ``rm -i`` and editors
read it), since that can only have been meant as "do not overwrite".
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile

try:
    import fcntl
except ImportError:  # Windows: no flock, and os.kill(pid, 0) there would end the process
    fcntl = None


def atomic_write(path: str, write) -> None:
    """Call ``write(f)`` on a binary file whose bytes atomically become ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"save: {path} is a directory; give a file name")
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: the folder {directory} does not exist; create it first")
    refuse_write_protected(path)
    name = os.path.basename(path)
    remove_orphans(directory, name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise type(exc)(exc.errno, f"save: cannot create a temporary file in {directory} to "
                        f"write {name} ({exc.strerror}); check the folder's permissions "
                        "and free space") from None
    try:
        with os.fdopen(fd, "wb") as f:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # released when this process ends
            write(f)
            f.flush()
            os.fsync(f.fileno())
            os.chmod(tmp, file_mode(path))  # mkstemp's 0600 would make every checkpoint private
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def refuse_write_protected(path: str) -> None:
    """Raise PermissionError naming ``path`` where ``open(path, "wb")`` would refuse it (see
    the module's docstring for root)."""
    try:
        info = os.stat(path)
    except OSError:
        return  # no file yet (or one we cannot see): creating it is the folder's business
    if not stat.S_ISREG(info.st_mode):
        return
    if getattr(os, "geteuid", lambda: None)() == 0:
        writable = bool(info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    else:
        writable = os.access(path, os.W_OK,
                             effective_ids=os.access in os.supports_effective_ids)
    if not writable:
        raise PermissionError(
            errno.EACCES, f"save: the checkpoint is write-protected (mode "
            f"{stat.S_IMODE(info.st_mode):04o}) and is not replaced, as open() would refuse "
            "it; make it writable (chmod u+w) or save under another name", path)


def remove_orphans(directory: str, name: str) -> list:
    """Remove the temp files of dead writers of ``directory/name``; return their paths."""
    if fcntl is None:
        return []
    pattern = re.compile(re.escape(f".{name}.") + r"(\d+)\.[A-Za-z0-9_]+\.tmp")
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match is None or _alive(int(match.group(1))):
            continue
        orphan = os.path.join(directory, entry)
        if _remove_if_unlocked(orphan):
            removed.append(orphan)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be writing it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # it exists (another user's), or we cannot tell: keep its file
    return True


def _remove_if_unlocked(orphan: str) -> bool:
    try:
        fd = os.open(orphan, os.O_RDONLY)
    except OSError:
        return False  # gone already (another saver removed it) or not ours to open
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its writer holds the lock: it is alive
        try:
            os.unlink(orphan)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)


def file_mode(path: str) -> int:
    """The mode a plain ``open(path, "wb")`` would leave: the old file's, else 0666 - umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (setting it to read
    it, the fallback, races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open a directory; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
