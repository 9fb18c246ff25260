"""The private per-user cache of compiled kernels: where it lives, who may write it, and how a library in it is trusted.

A shared object is code that runs with the loading process's rights, so nothing in the cache is
loaded unless this process's user could be the only one to have written it:

* **The folder** is ``$FP8LAB_CACHE_DIR`` (made absolute once), else ``$XDG_CACHE_HOME/fp8lab/ckernels``,
  else ``~/.cache/fp8lab/ckernels``. It is created with mode 0700 whatever the umask. It is opened once
  (``O_DIRECTORY | O_NOFOLLOW``) and every later step works relative to that descriptor, so renaming
  or replacing the path afterwards changes nothing. A folder not owned by the effective user, or
  writable by group or others, is refused: the caller falls back to torch and says why.
* **The name** of a library carries a hash of everything that built it: the C source, the compiler's
  path and ``--version``, the flags, the CPU's feature flags (``-march=native``) and the Python ABI.
* **A digest** (SHA-256 of the library's bytes, with its key) is written beside it at build time.
  Before loading, the library and its digest are opened without following links; each must be a
  regular file owned by the user and not writable by group or others; the bytes read must hash to the
  digest. The verified bytes are then copied into an anonymous memory file (``memfd_create``) and that
  is what ``dlopen`` maps, so the code that runs is exactly the code that was checked (and a file
  truncated later cannot SIGBUS a process that mapped it). Where there is no ``memfd_create``, the
  verified file's descriptor is loaded through ``/proc/self/fd``.
* **A build** runs under an exclusive ``flock`` of the folder's lock file (one gcc per cache, whatever
  the number of threads or processes arriving at once), into a temporary file that is renamed into
  place only after its digest is written: nobody ever loads a half-written library.
* Anything that fails a check (truncated, foreign, stale, a link, loose modes) is rebuilt where the
  folder is ours, and skipped otherwise; never loaded.

>>> key = build_key("int f(void){return 1;}", "cc", "cc (GCC) 14", ["-O2"])
>>> len(key), key == build_key("int f(void){return 2;}", "cc", "cc (GCC) 14", ["-O2"])
(64, False)
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import platform
import stat
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

__all__ = ["KernelCacheError", "cache_dir", "build_key", "library_name", "load_or_build", "check_private_dir"]

#: Everything under the cache folder that fp8lab itself writes: the libraries, their digests, the lock.
PREFIX = "fp8lab_kernels_"
_LOCK = threading.Lock()  # one build per process at a time; flock() below serialises processes


class KernelCacheError(OSError):
    """The kernels cannot be loaded from the cache safely; the message says why (the caller falls back to torch)."""


def cache_dir() -> Path:
    """The cache folder (absolute): ``$FP8LAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/fp8lab/ckernels``, else ``~/.cache/...``.

    >>> cache_dir().is_absolute()
    True
    """
    env = os.environ.get("FP8LAB_CACHE_DIR")
    if env:
        return Path(os.path.abspath(env))
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return Path(os.path.abspath(root / "fp8lab" / "ckernels"))


def _cpu_id() -> str:
    """What ``-march=native`` depends on: the machine and its CPU's feature flags."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith(("flags", "Features"))), "")
    except OSError:
        flags = ""
    return platform.machine() + flags


def build_key(source: str, cc: str, cc_version: str, flags: list[str]) -> str:
    """SHA-256 (hex) of what builds a library: source, compiler path and version, flags, CPU flags and the Python ABI.

    >>> build_key("x", "gcc", "gcc 14", ["-O3"]) != build_key("x", "gcc", "gcc 14", ["-O2"])
    True
    """
    abi = "|".join([sys.implementation.cache_tag or "", str(sysconfig.get_config_var("SOABI")), platform.platform()])
    return hashlib.sha256("\0".join([source, cc, cc_version, " ".join(flags), _cpu_id(), abi]).encode()).hexdigest()


def library_name(key: str) -> str:
    """The library's file name for a build key (its first 32 hex digits).

    >>> library_name("ab" * 32)
    'fp8lab_kernels_abababababababababababababababab.so'
    """
    return f"{PREFIX}{key[:32]}.so"


def _private(st: os.stat_result, what: str) -> None:
    """Raise unless ``st`` is owned by the effective user and not writable by group or others."""
    uid = os.geteuid()
    if st.st_uid != uid:
        raise KernelCacheError(f"{what} is owned by uid {st.st_uid}, not by this user (uid {uid})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KernelCacheError(f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                               f"run chmod go-w on it, or remove it")


def check_private_dir(path: Path, *, create: bool = True) -> int:
    """Open the cache folder (creating it with mode 0700 if needed) and return its descriptor, or raise KernelCacheError.

    >>> import tempfile, os
    >>> d = Path(tempfile.mkdtemp()) / "c"; fd = check_private_dir(d); oct(os.stat(d).st_mode & 0o777); os.close(fd)
    '0o700'
    """
    if create:
        try:
            _makedirs_private(path)
        except OSError as e:
            raise KernelCacheError(f"cannot create the kernel cache {path}: {e.strerror or e}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise KernelCacheError(f"cannot open the kernel cache {path} as a folder (not a link): {e.strerror or e}") from None
    try:
        _private(os.fstat(fd), f"the kernel cache {path}")
    except KernelCacheError:
        os.close(fd)
        raise
    return fd


def _makedirs_private(path: Path) -> None:
    """Create ``path`` and its missing parents, each with mode 0700 whatever the umask (existing ones are left as they are)."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)  # the umask may have removed the owner's bits; set them exactly


def _read_private(dir_fd: int, name: str) -> bytes | None:
    """The bytes of ``name`` in the folder, or None if absent; raise KernelCacheError if it is a link, not regular, or not private."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise KernelCacheError(f"{name} in the kernel cache cannot be opened as a plain file: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KernelCacheError(f"{name} in the kernel cache is not a regular file")
        _private(st, f"{name} in the kernel cache")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _verified(dir_fd: int, name: str, key: str) -> bytes | None:
    """The library's bytes if it and its digest pass every check, None if either is missing or fails one (the reason aside)."""
    try:
        blob, meta = _read_private(dir_fd, name), _read_private(dir_fd, name + ".sha256")
    except KernelCacheError:
        return None
    if blob is None or meta is None:
        return None
    try:
        record = json.loads(meta)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("key") != key or record.get("size") != len(blob) \
            or record.get("sha256") != hashlib.sha256(blob).hexdigest():
        return None
    return blob


def _write_private(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to ``name`` atomically: a private temporary file in the folder, then a rename over the name."""
    tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _compile(dir_fd: int, folder: Path, cc: str, flags: list[str], source: Path, name: str, key: str) -> bytes:
    """Run the compiler into a private temporary file of the folder, write the digest, then rename the library in."""
    tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.build.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    os.close(fd)
    try:
        # the path goes through /proc/self/fd/<folder> so that a renamed folder cannot redirect the output
        base = f"/proc/self/fd/{dir_fd}" if os.path.isdir(f"/proc/self/fd/{dir_fd}") else str(folder)
        res = subprocess.run([cc, *flags, "-o", f"{base}/{tmp}", str(source), "-lm"], capture_output=True, text=True,
                             timeout=300, pass_fds=(dir_fd,))
        if res.returncode:
            raise KernelCacheError(f"{cc} failed: {res.stderr.strip()[:500]}")
        out = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.fchmod(out, 0o700)  # the linker creates its output with 0777 less the umask: make it private again
        finally:
            os.close(out)
        blob = _read_private(dir_fd, tmp)
        if not blob:
            raise KernelCacheError(f"{cc} wrote no library")
        record = {"key": key, "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest(), "compiler": cc,
                  "flags": flags}
        _write_private(dir_fd, name + ".sha256", json.dumps(record).encode())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return blob
    finally:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


def _dlopen(blob: bytes, name: str, path: Path) -> Any:
    """dlopen exactly these bytes: through an anonymous memory file where the system has one, else the verified ``path``."""
    if not (hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")):
        return ctypes.CDLL(str(path))  # a private folder: only this user (or root) can have changed it since the check
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view):]
        lib = ctypes.CDLL(f"/proc/self/fd/{fd}")
    except BaseException:
        os.close(fd)
        raise
    # kept open for the process's life: glibc knows a loaded library by its path, so the number must never be reused
    _MEMFDS.append(fd)
    return lib


_MEMFDS: list[int] = []


def load_or_build(source: Path, cc: str, flags: list[str]) -> tuple[Any, Path]:
    """The verified kernels library (ctypes) and its cache path, built under a lock if missing or failing a check.

    Raises :class:`KernelCacheError` (an OSError) with the reason where the cache cannot be trusted
    or the build fails; the caller then runs everything in torch.

    >>> import tempfile, os, shutil
    >>> os.environ["FP8LAB_CACHE_DIR"] = tempfile.mkdtemp()
    >>> cc = shutil.which("gcc")
    >>> if cc:
    ...     src = Path(os.environ["FP8LAB_CACHE_DIR"]) / "k.c"; _ = src.write_text("int seven(void) { return 7; }")
    ...     lib, path = load_or_build(src, cc, ["-shared", "-fPIC"]); assert lib.seven() == 7 and path.exists()
    >>> del os.environ["FP8LAB_CACHE_DIR"]
    """
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise KernelCacheError(f"the compiler {cc} does not run: {e}") from None
    key = build_key(source.read_text(), cc, version, flags)
    name = library_name(key)
    folder = cache_dir()
    with _LOCK:
        dir_fd = check_private_dir(folder)
        try:
            blob = _verified(dir_fd, name, key)
            if blob is None:
                blob = _build_locked(dir_fd, folder, cc, flags, source, name, key)
            return _dlopen(blob, name, folder / name), folder / name
        finally:
            os.close(dir_fd)


def _build_locked(dir_fd: int, folder: Path, cc: str, flags: list[str], source: Path, name: str, key: str) -> bytes:
    """Build under an exclusive flock of the folder's lock file; whoever held it first may have built it already."""
    try:
        lock = os.open(PREFIX + "build.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as e:
        raise KernelCacheError(f"the kernel cache {folder} is not writable ({e.strerror or e}) and holds no valid "
                               f"library") from None
    try:
        _private(os.fstat(lock), f"the lock file in {folder}")
        fcntl.flock(lock, fcntl.LOCK_EX)
        blob = _verified(dir_fd, name, key)  # built by another process while this one waited
        if blob is None:
            blob = _compile(dir_fd, folder, cc, flags, source, name, key)
        return blob
    finally:
        os.close(lock)  # releases the flock
