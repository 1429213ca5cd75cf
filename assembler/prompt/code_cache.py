"""Compiled section templates, kept between runs in the user's cache (issue 21).

Compiling a template (Jinja2's lexer, parser and code generator, then Python's
`compile`) is most of what `render --dry-run` does beyond its imports: a few
milliseconds per section, and the lexer's set-up once per process. The result, a
Python code object, depends only on the template's text, the Jinja2 version, the
Python version and how the sandbox guards loops, so it is kept in the user's cache
directory under a name derived from all four and loaded with `marshal`, as Python's
own bytecode cache is. Agents that run (`assemble run`, `rpc`, `acp`, `eval`) keep
what they compile; `render --dry-run` and `validate`, which write nothing anywhere,
only use what is kept. A file that cannot be read or loaded is compiled again. A code
object runs when it is used, so a cache directory that another user could write to
is not used at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import tempfile
from collections.abc import Callable
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType

from assembler.user_dirs import default_cache_dir

#: Bump when what is compiled changes for the same text (the sandbox's loop and size
#: guards): code kept by an older version would render without the newer guards.
CACHE_FORMAT = "2"
TEMPLATES_DIR = "templates"


def cached_code(
    text: str, version: str, compile_text: Callable[[str], CodeType], *, keep: bool
) -> CodeType:
    """The code of template `text`: kept, or `compile_text(text)` (then kept if `keep`:
    a dry run or `validate` writes nothing, anywhere, and only reads what a run kept).
    `version` is the compiler's (Jinja2's) version."""
    path = _entry(text, version, create=keep)
    if path is not None:
        try:
            code = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            code = None
        if isinstance(code, CodeType):
            return code
    code = compile_text(text)
    if path is not None and keep:
        with contextlib.suppress(OSError):
            _write(path, marshal.dumps(code))
    return code


def _entry(text: str, version: str, *, create: bool) -> Path | None:
    """Where the code of `text` is kept; None when the cache may not be used."""
    directory = default_cache_dir() / TEMPLATES_DIR
    try:
        if create:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError:
        return None
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        return None  # someone else's, or writable by others
    key = "\0".join((CACHE_FORMAT, version, MAGIC_NUMBER.hex(), text))
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return directory / f"{digest}.code"


def _write(path: Path, data: bytes) -> None:
    """Replace `path` whole (another process may be reading it); no fsync: a cache."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
