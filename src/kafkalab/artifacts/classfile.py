"""Java class files: which classes in a set of jars have a runnable `public static void main`."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kafkalab.artifacts.errors import ArtifactError


def has_public_static_main(classfile: bytes) -> bool:
    """Whether a .class file declares `public static void main(String[])` (parses the class file format)."""
    if classfile[:4] != b"\xca\xfe\xba\xbe":
        return False
    pos = 8
    (count,) = struct.unpack_from(">H", classfile, pos)
    pos += 2
    utf8: dict[int, str] = {}
    index = 1
    # Constant pool entry sizes after the tag byte, by tag (JVMS 4.4); Utf8 is variable.
    sizes = {
        3: 4,
        4: 4,
        5: 8,
        6: 8,
        7: 2,
        8: 2,
        9: 4,
        10: 4,
        11: 4,
        12: 4,
        15: 3,
        16: 2,
        17: 4,
        18: 4,
        19: 2,
        20: 2,
    }
    while index < count:
        tag = classfile[pos]
        pos += 1
        if tag == 1:
            (length,) = struct.unpack_from(">H", classfile, pos)
            utf8[index] = classfile[pos + 2 : pos + 2 + length].decode("utf-8", "replace")
            pos += 2 + length
        elif tag in sizes:
            pos += sizes[tag]
        else:
            return False
        index += 2 if tag in (5, 6) else 1  # longs and doubles take two slots
    pos += 6  # access_flags, this_class, super_class
    (interfaces,) = struct.unpack_from(">H", classfile, pos)
    pos += 2 + 2 * interfaces

    def read_members(start: int) -> tuple[list[tuple[int, int, int]], int]:
        """(flags, name index, descriptor index) of each field or method, and the offset after them."""
        (n,) = struct.unpack_from(">H", classfile, start)
        cursor = start + 2
        found = []
        for _ in range(n):
            flags, name, descriptor, attributes = struct.unpack_from(">HHHH", classfile, cursor)
            cursor += 8
            for _ in range(attributes):
                (length,) = struct.unpack_from(">I", classfile, cursor + 2)
                cursor += 6 + length
            found.append((flags, name, descriptor))
        return found, cursor

    _, methods_start = read_members(pos)  # fields come first
    methods, _ = read_members(methods_start)
    for flags, name, descriptor in methods:
        if utf8.get(name) == "main" and utf8.get(descriptor) == "([Ljava/lang/String;)V" and flags & 0x0009 == 0x0009:
            return True
    return False


def find_tool_classes(jars: Iterable[Path], candidates: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """For each tool, the first candidate class present in the jars with a runnable main method."""
    wanted = {cls.replace(".", "/") + ".class" for options in candidates.values() for cls in options}
    runnable: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as archive:
            for name in wanted.intersection(archive.namelist()):
                if has_public_static_main(archive.read(name)):
                    runnable.add(name[: -len(".class")].replace("/", "."))
    tools: dict[str, str] = {}
    missing = []
    for tool, options in candidates.items():
        found = next((cls for cls in options if cls in runnable), None)
        if found is None:
            missing.append(f"{tool} (looked for {', '.join(options)})")
        else:
            tools[tool] = found
    if missing:
        raise ArtifactError("no main class found for: " + "; ".join(missing))
    return tools
