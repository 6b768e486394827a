"""Reading a version 1-3 Z-machine story's state straight from its memory.

Jericho treats the MIT release of Zork I (``zork1.z3``) as an unsupported game: it runs it, but
reports no score, moves, location or inventory. Everything needed is in the Z-machine's memory,
laid out by the Z-machine Standard 1.1:

* the header (§11): version, the addresses of the object table, the globals and the
  abbreviations, the file length and checksum;
* the globals (§6.2): in a version 1-3 "status line" game, global 0 holds the player's location
  object, global 1 the score and global 2 the moves (§8.2.2);
* the object table (§12): 31 default property words, then 9-byte entries
  (4 attribute bytes, parent, sibling, child, property-table address); each property table starts
  with the object's short name as a Z-string (§3).

:class:`StoryMemory` is a read-only view over one snapshot of memory: the dynamic memory that the
interpreter reports, followed by the story file's static and high memory (which never change).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "StoryHeader",
    "StoryMemory",
    "check_story_bytes",
]

# Z-machine Standard §3.5.3: the three alphabets of version 2-4 (A2 position 6 is the ZSCII
# escape, position 7 a new line).
_A0 = "abcdefghijklmnopqrstuvwxyz"
_A1 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_A2 = " \n0123456789.,!?_#'\"/\\-:()"

_HEADER_SIZE = 64
_MAX_OBJECTS_V3 = 255
_OBJECT_ENTRY_SIZE_V3 = 9
_PROPERTY_DEFAULTS_SIZE_V3 = 31 * 2


class StoryHeader:
    """The header fields of a story file that this package uses (Z-machine Standard §11).

    Args:
        data: the story file's bytes (or a memory snapshot, whose first 64 bytes are the header).
    """

    __slots__ = (
        "abbreviations",
        "checksum",
        "file_length",
        "globals",
        "object_table",
        "release",
        "serial",
        "static_base",
        "version",
    )

    def __init__(self, data: bytes) -> None:
        self.version = data[0]
        self.release = _word(data, 0x02)
        self.object_table = _word(data, 0x0A)
        self.globals = _word(data, 0x0C)
        self.static_base = _word(data, 0x0E)
        self.serial = data[0x12:0x18].decode("ascii", errors="replace")
        self.abbreviations = _word(data, 0x18)
        scale = 2 if self.version <= 3 else 4 if self.version <= 5 else 8
        self.file_length = _word(data, 0x1A) * scale
        self.checksum = _word(data, 0x1C)


def check_story_bytes(data: bytes, name: str) -> StoryHeader:
    """Check that ``data`` is a sound Z-machine story file before an interpreter sees it.

    Frotz trusts its input; a truncated or foreign file can crash the whole process, so the
    header, the stated length and the checksum (Standard §11.1.6) are checked first.

    Args:
        data: the file's bytes.
        name: the file's name, for messages.

    Returns:
        The parsed header.

    Raises:
        ValueError: the bytes are not a complete, uncorrupted story file; the message says why.
    """
    if len(data) < _HEADER_SIZE:
        raise ValueError(f"{name} is {len(data)} bytes long, too short to be a Z-machine story file")
    header = StoryHeader(data)
    if not 1 <= header.version <= 8:
        raise ValueError(
            f"{name} is not a Z-machine story file (its first byte, the version, is {header.version}; "
            "story files have 1-8)"
        )
    if header.file_length:  # 0 in some very old files: nothing to check then
        if header.file_length > len(data):
            raise ValueError(
                f"{name} is truncated: the header says {header.file_length} bytes, the file has {len(data)}"
            )
        total = sum(data[_HEADER_SIZE : header.file_length]) & 0xFFFF
        if total != header.checksum:
            raise ValueError(
                f"{name} is corrupt: its checksum is {total:#06x}, the header says {header.checksum:#06x}"
            )
    for field, address in (
        ("object table", header.object_table),
        ("globals", header.globals),
        ("static memory", header.static_base),
    ):
        if not _HEADER_SIZE <= address < len(data):
            raise ValueError(f"{name} is not a Z-machine story file ({field} at {address} is outside it)")
    return header


class StoryMemory:
    """A read-only snapshot of a version 1-3 story's memory.

    Args:
        story: the story file's bytes (static and high memory come from here).
        dynamic: the current dynamic memory as the interpreter reports it (may be shorter or
            longer than the story's dynamic area; the story's bytes fill in the rest).

    Raises:
        ValueError: the story is not version 1-3 (its object table has another layout).
    """

    __slots__ = ("_data", "dynamic", "header")

    def __init__(self, story: bytes, dynamic: bytes) -> None:
        self.header = StoryHeader(story)
        if not 1 <= self.header.version <= 3:
            raise ValueError(f"a version {self.header.version} story: only versions 1-3 have a status line")
        self.dynamic = dynamic
        """The dynamic memory this snapshot was made of."""
        self._data = dynamic + story[len(dynamic) :]

    # -- globals (§6.2) -------------------------------------------------------------------------

    def global_word(self, index: int) -> int:
        """Global variable ``index`` (0-239) as an unsigned 16-bit number."""
        if not 0 <= index < 240:
            raise IndexError(f"global {index} out of range 0-239")
        return _word(self._data, self.header.globals + 2 * index)

    def global_signed(self, index: int) -> int:
        """Global variable ``index`` as a signed 16-bit number (a score can be negative)."""
        value = self.global_word(index)
        return value - 0x10000 if value >= 0x8000 else value

    # -- objects (§12) --------------------------------------------------------------------------

    def object_count(self) -> int:
        """How many objects the table holds: entries run up to the first property table."""
        first_entry = self.header.object_table + _PROPERTY_DEFAULTS_SIZE_V3
        lowest_property = len(self._data)
        count = 0
        while count < _MAX_OBJECTS_V3:
            entry = first_entry + _OBJECT_ENTRY_SIZE_V3 * count
            if entry + _OBJECT_ENTRY_SIZE_V3 > min(lowest_property, len(self._data)):
                break
            lowest_property = min(lowest_property, _word(self._data, entry + 7))
            count += 1
        return count

    def _entry(self, number: int) -> int:
        if not 1 <= number <= _MAX_OBJECTS_V3:
            raise IndexError(f"object {number} out of range 1-{_MAX_OBJECTS_V3}")
        return self.header.object_table + _PROPERTY_DEFAULTS_SIZE_V3 + _OBJECT_ENTRY_SIZE_V3 * (number - 1)

    def parent(self, number: int) -> int:
        """The parent of object ``number`` (0 for none)."""
        return self._data[self._entry(number) + 4]

    def sibling(self, number: int) -> int:
        """The next sibling of object ``number`` (0 for none)."""
        return self._data[self._entry(number) + 5]

    def child(self, number: int) -> int:
        """The first child of object ``number`` (0 for none)."""
        return self._data[self._entry(number) + 6]

    def children(self, number: int) -> Iterator[int]:
        """The children of object ``number``, first child first (the order the game lists them)."""
        seen: set[int] = set()
        current = self.child(number)
        while current and current not in seen:  # a corrupt tree must not loop forever
            seen.add(current)
            yield current
            current = self.sibling(current)

    def name(self, number: int) -> str:
        """The short name of object ``number`` (the first thing in its property table)."""
        properties = _word(self._data, self._entry(number) + 7)
        if properties >= len(self._data) or self._data[properties] == 0:
            return ""
        return self.decode_string(properties + 1)

    # -- text (§3) ------------------------------------------------------------------------------

    def decode_string(self, address: int, *, _in_abbreviation: bool = False) -> str:
        """Decode the Z-string at ``address`` (version 3 rules: single shifts, abbreviations).

        Args:
            address: byte address of the string's first word.

        Returns:
            The decoded text.
        """
        zchars: list[int] = []
        while address + 1 < len(self._data):
            word = _word(self._data, address)
            address += 2
            zchars += ((word >> 10) & 0x1F, (word >> 5) & 0x1F, word & 0x1F)
            if word & 0x8000:
                break
        out: list[str] = []
        alphabet = 0
        i = 0
        while i < len(zchars):
            z = zchars[i]
            i += 1
            if z == 0:
                out.append(" ")
            elif z in (1, 2, 3):
                if i < len(zchars) and not _in_abbreviation:  # §3.3.1: no abbreviations inside one
                    index = 32 * (z - 1) + zchars[i]
                    target = _word(self._data, self.header.abbreviations + 2 * index) * 2
                    out.append(self.decode_string(target, _in_abbreviation=True))
                i += 1
            elif z in (4, 5):
                alphabet = z - 3
                continue
            elif alphabet == 2 and z == 6:  # §3.4: a 10-bit ZSCII code follows
                if i + 1 < len(zchars):
                    out.append(_zscii(zchars[i] << 5 | zchars[i + 1]))
                i += 2
            else:
                out.append((_A0, _A1, _A2)[alphabet][z - 6])
            alphabet = 0
        return "".join(out)


def _word(data: bytes, address: int) -> int:
    return data[address] << 8 | data[address + 1]


def _zscii(code: int) -> str:
    if code == 13:
        return "\n"
    return chr(code) if 32 <= code <= 126 else "?"
