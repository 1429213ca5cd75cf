"""The rows the memory index holds, shared by the reader (`index`) and the writer
(`_index_writer`) without either importing the other."""

from __future__ import annotations

from typing import NamedTuple

Stamp = tuple[int, int, int]
"""(inode, mtime_ns, size) of a file: changes whenever the file is replaced or edited."""

DirectoryStamp = tuple[int, int]
"""(inode, mtime_ns) of the store directory: changes when a file is added, removed or
renamed in it."""


class IndexEntry(NamedTuple):
    """What the index knows of a record without reading its file."""

    name: str
    description: str
    type: str
    chars: int
    inode: int
    mtime_ns: int
    size: int

    @property
    def stamp(self) -> Stamp:
        """The stamp of the file this entry was read from."""
        return (self.inode, self.mtime_ns, self.size)


class InvalidFile(NamedTuple):
    """A `.md` file that is not a valid record. `message` leaves out the directory,
    which may be moved; the store adds it when reporting."""

    file: str
    inode: int
    mtime_ns: int
    size: int
    message: str

    @property
    def stamp(self) -> Stamp:
        return (self.inode, self.mtime_ns, self.size)
