#!/usr/bin/env python3
"""Every ```cpp block of README.md and of the public headers' comments compiles.

The blocks
  README.md: each fenced block whose info string is `cpp`.
  include/memopt/**/*.hpp: each ```cpp ... ``` block inside a `///` (or `//`) comment; the
  comment marker and one space are stripped from each line.
  CUDA headers (memopt/backend/cuda*, *.cuh) are left out: their blocks need nvcc.

The rule (one for every block; no per-block setup)
  - `#include` lines are moved to the top of the generated file, before everything else.
  - A block with `int main(` is a whole program: it is compiled as written, alone.
  - A block whose first line (after `#include`s and comments) begins a class or template
    (`struct`, `class`, `template`) declares things: it is compiled at namespace scope, in a
    namespace of its own that sees the names below (a local class could have no static
    data member nor member template).
  - Any other block is a fragment: the rest of it is the body of a function
    `void run()`, in a namespace of its own that sees the names of tests/snippets/context.hpp
    (`mo`, `Net`, `Model`, `model`, `train`, `test`, `batches`, `step`, `use`, ...: what the
    examples take as already made; read that file for the list) and, for a block that needs
    an optional target, of context_<target>.hpp beside it (`dir`, `bytes`, `img`, ...). A
    fragment may redeclare any of them. A fragment from a header also sees
    `memopt/memopt.hpp` and that header.
  - A block whose first line is `// not compiled: <why>` is skipped (it shows an error or
    pseudo-code on purpose; keep these rare).
  - Unused variables, parameters and typedefs do not warn (examples name values to show them); every
    other warning of memopt's own build is an error under MEMOPT_WERROR, as it is.

The compiler and its flags are the project's: CMake exports the compile command of one
probe source per group of link targets (tests/snippets/CMakeLists.txt); this script reuses
it with the probe replaced by the generated file and -fsyntax-only. Blocks are grouped by the
optional target they need (memopt::images, memopt::hdf5, memopt::onnx, memopt::mpi, read from
their header or their `#include` lines), one translation unit per group; `#line` directives
make every diagnostic point at the block's line in its header or README, and each error is
attributed to the block it points at (or whose line is the "required from here").

tests/snippets/known_failures.txt lists blocks (`path#N`, the N-th ```cpp block of the
file) that do not compile yet; the test fails when a listed block compiles (take it off the
list) or an unlisted one does not. The list may only shrink.

Exit status: 0 all good, 1 a failure, 77 skipped (no compile_commands.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SKIP = 77
NOT_COMPILED = re.compile(r"^\s*//\s*not compiled:\s*\S")
HEADER_FENCE_OPEN = re.compile(r"^\s*///?\s?```cpp\s*$")
HEADER_FENCE_CLOSE = re.compile(r"^\s*///?\s?```\s*$")
HEADER_COMMENT = re.compile(r"^\s*///? ?")
INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]")
# The headers that need an optional target, by path under include/.
NEEDS = [
    (re.compile(r"^memopt/(io/image/|data/image_|data/decode_images)"), "images"),
    (re.compile(r"^memopt/images\.hpp$"), "images"),
    (re.compile(r"^memopt/io/(keras_h5|detail/hdf5)\.hpp$"), "hdf5"),
    (re.compile(r"^memopt/io/onnx\.hpp$"), "onnx"),
    (re.compile(r"^memopt/distributed/mpi_communicator\.hpp$"), "mpi"),
]
CUDA = re.compile(r"^memopt/backend/cuda(/|\.hpp$)|\.cuh$")


@dataclass
class Block:
    path: Path            # the file it is in (absolute)
    key: str              # "relpath#N"
    first_line: int       # line number of the block's first code line in `path`
    lines: list[str]
    header: str | None    # "memopt/..." when the block is in a header
    group: str = "core"
    program: bool = False
    declarations: bool = False
    errors: list[str] = field(default_factory=list)

    def includes(self) -> list[tuple[int, str]]:
        return [(self.first_line + i, l) for i, l in enumerate(self.lines) if INCLUDE.match(l)]


def needs_of(header: str) -> str | None:
    for pattern, group in NEEDS:
        if pattern.search(header):
            return group
    return None


def extract(root: Path) -> list[Block]:
    blocks: list[Block] = []
    headers = sorted((root / "include").rglob("*.hpp")) + sorted((root / "include").rglob("*.cuh"))
    for path in headers:
        rel = path.relative_to(root / "include").as_posix()
        if CUDA.search(rel):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        n = 0
        i = 0
        while i < len(lines):
            if HEADER_FENCE_OPEN.match(lines[i]):
                n += 1
                start = i + 1
                j = start
                while j < len(lines) and not HEADER_FENCE_CLOSE.match(lines[j]):
                    j += 1
                body = [HEADER_COMMENT.sub("", l, count=1) for l in lines[start:j]]
                blocks.append(Block(path, f"include/{rel}#{n}", start + 1, body, rel))
                i = j
            i += 1
    readme = root / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines()
    n = 0
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            n += 1
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append(Block(readme, f"README.md#{n}", start + 1, lines[start:j], None))
            i = j
        i += 1
    for b in blocks:
        needs = set()
        if b.header and needs_of(b.header):
            needs.add(needs_of(b.header))
        for _, inc in b.includes():
            g = needs_of(INCLUDE.match(inc).group(1))
            if g:
                needs.add(g)
        if len(needs) > 1:
            b.group = "+".join(sorted(needs))
        elif needs:
            b.group = needs.pop()
        b.program = any(re.match(r"^\s*int\s+main\s*\(", l) for l in b.lines)
        code = [l for l in b.lines if l.strip() and not INCLUDE.match(l)
                and not l.lstrip().startswith("//")]
        b.declarations = bool(code) and re.match(r"^(struct|class|template)\b", code[0]) is not None
    return blocks


def quote(path: Path) -> str:
    return json.dumps(str(path))


def program_unit(b: Block) -> str:
    return (f"// Generated by tests/snippets/check_snippets.py: do not edit.\n"
            f"#line {b.first_line} {quote(b.path)}\n" + "\n".join(b.lines) + "\n")


def translation_unit(blocks: list[Block], contexts: list[Path]) -> str:
    out = ["// Generated by tests/snippets/check_snippets.py: do not edit.",
           "#include <memopt/memopt.hpp>"]
    for h in sorted({b.header for b in blocks if b.header}):
        out.append(f"#include <{h}>")
    for b in blocks:
        for line_no, inc in b.includes():
            out.append(f"#line {line_no} {quote(b.path)}")
            out.append(inc)
    for c in contexts:
        out.append(f"#include {quote(c)}")
    for k, b in enumerate(blocks):
        out.append(f"namespace memopt_snippet_{k} {{")
        out.append("using namespace memopt_snippets_context;")
        if not b.declarations:
            out.append("[[maybe_unused]] void run() {")
        out.append(f"#line {b.first_line} {quote(b.path)}")
        for l in b.lines:
            out.append("" if INCLUDE.match(l) else l)
        if not b.declarations:
            out.append("}")
        out.append("}")
    return "\n".join(out) + "\n"


LOCATION = re.compile(r"^(?:In file included from |\s*from )?(?P<file>/[^:]+):(?P<line>\d+)(?::\d+)?[:,]")
ERROR = re.compile(r"^(?P<file>[^:]+):\d+(?::\d+)?: (?:fatal )?error:")


def attribute(output: str, blocks: list[Block], clang: bool) -> list[str]:
    """Gives each block the errors that point at it; returns the errors that point at none.

    An error inside memopt's own code belongs to the block on its instantiation context:
    GCC prints the context ("required from here") before the error, and not again for the
    next errors of the same instantiation; Clang prints it after, as notes."""
    ranges = [(str(b.path), b.first_line, b.first_line + len(b.lines), b) for b in blocks]

    def block_at(line: str) -> Block | None:
        m = LOCATION.match(line.strip())
        if not m:
            return None
        f, n = m.group("file"), int(m.group("line"))
        for path, lo, hi, b in ranges:
            if f == path and lo <= n < hi:
                return b
        return None

    lines = output.splitlines()
    refs = [block_at(l) for l in lines]
    errors = [i for i, l in enumerate(lines) if ERROR.match(l)]
    unattributed = []
    previous = None
    for k, i in enumerate(errors):
        owner = refs[i]
        lo = errors[k - 1] + 1 if k else 0
        hi = errors[k + 1] if k + 1 < len(errors) else len(lines)
        if owner is None and clang:
            after = [r for r in refs[i + 1:hi] if r is not None]
            owner = after[0] if after else None
        elif owner is None:
            before = [r for r in refs[lo:i] if r is not None]
            owner = before[-1] if before else previous
        if owner is None:
            unattributed.append(lines[i])
        else:
            owner.errors.append(lines[i])
        previous = owner
    return unattributed


def probe_commands(build_dir: Path, probes: dict[str, Path]) -> dict[str, tuple[list[str], str]]:
    db = build_dir / "compile_commands.json"
    if not db.exists():
        return {}
    found = {}
    for entry in json.loads(db.read_text()):
        for group, probe in probes.items():
            if Path(entry["file"]).resolve() == probe.resolve():
                args = entry.get("arguments") or shlex.split(entry["command"])
                found[group] = (args, entry["directory"])
    return found


def command_for(args: list[str], probe: Path, source: Path) -> list[str]:
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        if Path(a).name == probe.name:
            out.append(str(source))
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
                  "-Wno-unused-parameter", "-Wno-unused-local-typedefs"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", type=Path, required=True)
    ap.add_argument("--build-dir", type=Path, required=True)
    ap.add_argument("--work-dir", type=Path, required=True)
    ap.add_argument("--probe", action="append", default=[], metavar="GROUP=FILE",
                    help="the probe source whose compile command a group uses")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="list the blocks and their groups")
    ap.add_argument("--show-known", action="store_true",
                    help="print the errors of the blocks known_failures.txt lists, too")
    a = ap.parse_args()

    root = a.source_dir.resolve()
    here = Path(__file__).resolve().parent
    blocks = extract(root)
    if a.list:
        for b in blocks:
            kind = "program" if b.program else "fragment"
            print(f"{b.key:60} {b.group:8} {kind}  {b.path}:{b.first_line}")
        return 0

    known_file = here / "known_failures.txt"
    known = set()
    if known_file.exists():
        for l in known_file.read_text().splitlines():
            l = l.split("  #")[0].strip()
            if l and not l.startswith("#"):
                known.add(l)

    skipped = [b for b in blocks if b.lines and NOT_COMPILED.match(b.lines[0])]
    blocks = [b for b in blocks if b not in skipped]
    probes = {}
    for p in a.probe:
        g, f = p.split("=", 1)
        probes[g] = Path(f)
    commands = probe_commands(a.build_dir, probes)
    if "core" not in commands:
        print(f"snippets: no compile command for the probe in {a.build_dir}/compile_commands.json "
              "(a Ninja or Makefile generator exports it); skipped")
        return SKIP

    # One translation unit per group of fragments, one per program.
    units: dict[str, tuple[str, list[Block], str]] = {}
    missing: dict[str, int] = {}
    for b in blocks:
        if b.group not in commands:
            missing[b.group] = missing.get(b.group, 0) + 1
            continue
        if b.program:
            units[f"program_{len(units)}"] = (b.group, [b], program_unit(b))
        else:
            name = f"fragments_{b.group}"
            units.setdefault(name, (b.group, [], ""))[1].append(b)
    for name, (group, bs, text) in list(units.items()):
        if not text:
            contexts = [here / "context.hpp"] + [
                here / f"context_{g}.hpp" for g in group.split("+")
                if (here / f"context_{g}.hpp").exists()]
            units[name] = (group, bs, translation_unit(bs, contexts))
    a.work_dir = a.work_dir.resolve()
    a.work_dir.mkdir(parents=True, exist_ok=True)

    def compile_unit(name: str) -> tuple[str, int, str]:
        group, _, text = units[name]
        source = a.work_dir / f"snippets_{name.replace('+', '_')}.cpp"
        source.write_text(text)
        args, cwd = commands[group]
        cmd = command_for(args, probes[group], source)
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        return name, r.returncode, r.stdout

    failed = False
    unknown: set[str] = set()  # blocks of a unit that failed for reasons no block shows
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(compile_unit, units))
    for name, rc, out in results:
        bs = units[name][1]
        unattributed = attribute(out, bs, "clang" in Path(commands[units[name][0]][0][0]).name)
        if rc != 0 and not unattributed and not any(b.errors for b in bs):
            unattributed = ["(the compiler failed without an error this script could place)"]
        if unattributed:
            failed = True
            unknown.update(b.key for b in bs)
            print(out)
            print(f"snippets: {name}: errors that point at no block:")
            for e in unattributed:
                print("  " + e)
        print(f"snippets: {name}: {len(bs)} blocks, compiler exit {rc}")

    checked = [b for _, bs, _ in units.values() for b in bs]
    new_failures = [b for b in checked if b.errors and b.key not in known]
    fixed = [b for b in checked if not b.errors and b.key in known and b.key not in unknown]
    for b in new_failures:
        failed = True
        print(f"\nFAILED {b.key} ({b.path}:{b.first_line}):")
        for e in b.errors[:10]:
            print("  " + e)
    if a.show_known:
        for b in checked:
            if b.errors and b.key in known:
                print(f"\nknown failure {b.key} ({b.path}:{b.first_line}):")
                for e in b.errors[:6]:
                    print("  " + e)
    for b in fixed:
        failed = True
        print(f"\n{b.key} compiles now: take it off {known_file.name}")
    stale = known - {b.key for b in blocks}
    for k in sorted(stale):
        failed = True
        print(f"\n{k} is in {known_file.name} but is no ```cpp block (any more)")
    for g, n in missing.items():
        print(f"snippets: {n} blocks need memopt::{g}, which this build lacks; not checked")
    print(f"snippets: {len(checked)} blocks checked, {len([b for b in checked if b.errors])} "
          f"fail ({len(known)} known), {len(skipped)} marked `not compiled`")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
