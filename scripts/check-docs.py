#!/usr/bin/env python3
"""Checks that the user documentation (README.md and docs/*.md) still matches the code.

    scripts/check-docs.py                  # every check
    scripts/check-docs.py links flags      # only those (fast: no build)
    scripts/check-docs.py compile          # only the Swift samples

links    every relative link and #anchor in README.md and docs/*.md resolves (GitHub's heading slugs), and
         every repository path the prose names in inline code (`Sources/...`, `Tests/...`, ...) exists.
flags    every --flag the docs give loadtest or an example server is one its parser accepts (read from the
         parsers' sources, so no build is needed).
compile  every ```swift block builds, in a package of its own (.build/doc-samples) that depends on this one
         by path: one file per block; `import` lines stay at the top of the file, declarations that start
         in column 0 (types, extensions, functions) stay at file scope (made private, so two blocks may both
         declare an `Echo`), and the statements are wrapped in an async throwing function, so fragments
         such as `let group = try EventLoopGroup()` or `for try await ...` compile. A block without an
         `import` gets `Dispatch`, `EpollLoop`, `FoundationEssentials` and `LoopSocket`; a block with one
         gets only its own, so a sample that forgets an import fails. Names a fragment uses without
         declaring (`group`, `sock`, `delegate`, ...) come from Placeholders.swift below: they are never
         evaluated, since the samples are compiled, not run. A block whose info string is
         `swift no-compile` is skipped (for code that needs a package this one does not depend on).
fences   every fence's info string uses only the words these scripts read: after `swift`, `no-compile` and
         `file=PATH` (a file scripts/run-doc-blocks.py writes for the blocks after it); after `sh`, `bash` or
         `shell`, `not-runnable: REASON` (a block run-doc-blocks.py leaves out and lists), with its reason.

Python 3 standard library only; exit status 0 when every check passes, 1 with one line per defect.
"""
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


def doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def rel(path):
    return path.relative_to(ROOT).as_posix()


def split_blocks(text):
    """Yields (kind, info, first line number, lines): kind 'code' for fenced blocks, 'text' otherwise."""
    lines = text.split("\n")
    i = 0
    prose, prose_start = [], 1
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            yield "text", "", prose_start, prose
        fence, info, start = m.group(2), m.group(3).strip(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        yield "code", info, start + 1, body
        i += 1
        prose, prose_start = [], i + 1
    if prose:
        yield "text", "", prose_start, prose


# ---------------------------------------------------------------------------------------------------------
# links

def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    out = []
    for ch in text:
        if ch == " ":
            out.append("-")
        elif ch in "-_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for kind, _, _, lines in split_blocks(path.read_text(encoding="utf-8")):
            if kind != "text":
                continue
            for line in lines:
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")):
            found.add(m.group(1))
        cache[path] = found
    return cache[path]


def prose_links(lines):
    """(target, line offset) of the Markdown links in prose, inline code left out."""
    for n, line in enumerate(lines):
        line = re.sub(r"`+[^`]*`+", "", line)
        for m in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            yield m.group(1), n
        for m in re.finditer(r"^\s*\[[^\]]+\]:\s*(\S+)", line):
            yield m.group(1), n


def check_links():
    problems = []
    for doc in doc_files():
        for kind, _, start, lines in split_blocks(doc.read_text(encoding="utf-8")):
            if kind != "text":
                continue
            for target, offset in prose_links(lines):
                where = f"{rel(doc)}:{start + offset}"
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                path_part, _, anchor = target.partition("#")
                dest = doc if not path_part else (doc.parent / path_part).resolve()
                if not dest.exists():
                    problems.append(f"{where}: link to {target}: {path_part} does not exist")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{where}: link to {target}: {rel(dest)} has no heading with the anchor #{anchor}")
            for offset, line in enumerate(lines):
                for path in re.findall(r"`((?:Sources|Tests|Benchmarks|CEpollShim|deploy|scripts|\.ci)/[^`\s]*)`", line):
                    if "/.build" in path or path.startswith("Benchmarks/.build"):
                        continue  # build products
                    if not list(ROOT.glob(path.rstrip("/"))):
                        problems.append(f"{rel(doc)}:{start + offset}: {path} does not exist in the repository")
    return problems


# ---------------------------------------------------------------------------------------------------------
# flags

SERVERS = ["echo-server", "async-echo-server", "http-hello", "udp-echo-server"]


def quoted_cases(path):
    """Every string literal starting with '-' in a `case "..."[, "..."]` of a parser source."""
    return quoted_cases_text(path.read_text(encoding="utf-8"))


def mode_files():
    """Each loadtest mode's file, `LoadMode+X.swift`, wherever its protocol's folder is."""
    return sorted((ROOT / "Sources" / "LoadTest").rglob("LoadMode+*.swift"), key=lambda p: p.name)


def accepted_flags():
    src = ROOT / "Sources"
    # The parser's files, and each mode's (`LoadMode+X.swift`, in its protocol's folder).
    parsers = sorted((src / "LoadTest" / "CLI").glob("CommandLineParser*.swift"))
    parsers += [src / "LoadTest" / "Core" / "LoadConfig+TLS.swift"]
    parsers += mode_files()
    loadtest = set().union(*(quoted_cases(p) for p in parsers))
    # Each mode's own options: the `flags: [...]` of its ModeOptions.
    for mode in mode_files():
        for group in re.findall(r"flags:\s*\[([^\]]*)\]", mode.read_text(encoding="utf-8")):
            loadtest |= set(re.findall(r'"(-[^"]*)"', group))
    # The short spellings: the keys of CommandLineParser.aliases.
    parser_source = (src / "LoadTest" / "CLI" / "CommandLineParser.swift").read_text(encoding="utf-8")
    aliases = parser_source[parser_source.index("static let aliases"):].split("]")[0]
    loadtest |= set(re.findall(r'"(-[A-Za-z])"\s*:', aliases))
    merge_source = (src / "LoadTest" / "CLI" / "CommandLineParser.swift").read_text(encoding="utf-8")
    merge_body = merge_source[merge_source.index("func parseMerge"):]
    merge = quoted_cases_text(merge_body)
    # merge's short spellings: the aliases its ArgumentScanner is given (the first list after parseMerge).
    merge |= set(re.findall(r'"(-[A-Za-z])"\s*:', merge_body.split("]")[0]))
    # compare's own parser, with its short spellings likewise.
    compare_body = (src / "LoadTest" / "Compare" / "CompareCommand.swift").read_text(encoding="utf-8")
    compare = quoted_cases_text(compare_body) | set(re.findall(r'"(-[A-Za-z])"\s*:', compare_body))
    server_args = src / "ExampleSupport" / "ServerArguments.swift"
    common = quoted_cases(server_args)
    servers = {}
    for name in SERVERS:
        main = (src / name / "main.swift").read_text(encoding="utf-8")
        flags = set(common)
        if "tls: false" in main:
            flags -= {"--tls-cert", "--tls-key"}
        if "reusePort: true" not in main:
            flags.discard("--reuse-port")
        servers[name] = flags
    return loadtest, merge, compare, servers


def quoted_cases_text(text):
    flags = set()
    for m in re.finditer(r'case\s+((?:"-[^"]*"\s*,\s*)*"-[^"]*")', text):
        flags.update(re.findall(r'"(-[^"]*)"', m.group(1)))
    return flags


PROGRAM = re.compile(r"(?:^|[\s/(`$])(" + "|".join(map(re.escape, ["loadtest"] + SERVERS)) + r")(?=\s|$)")


def commands(doc):
    """(line number, program, arguments) for each loadtest or server command line the page shows: in shell
    blocks, and in inline code."""
    text = doc.read_text(encoding="utf-8")
    found = []
    for kind, info, start, lines in split_blocks(text):
        if kind == "code" and info.split()[:1] not in ([], ["sh"], ["bash"], ["shell"], ["console"]):
            continue
        joined, first = "", None
        for n, line in enumerate(lines):
            pieces = [line] if kind == "code" else re.findall(r"`([^`]+)`", line)
            for piece in pieces:
                if kind == "code":
                    if first is None:
                        first = n
                    joined += " " + piece.rstrip("\\")
                    if line.rstrip().endswith("\\"):
                        continue
                    piece, joined, at = joined, "", first
                    first = None
                else:
                    at = n
                piece = re.sub(r"(^|\s)#.*$", "", piece)  # a shell comment
                piece = re.sub(r"\$\([^)]*\)", "", piece)  # a command substitution
                for segment in re.split(r"\|\||&&|[|;&]", piece):
                    m = PROGRAM.search(segment)
                    if m:
                        found.append((start + at, m.group(1), segment[m.end():].split()))
    return found


def option_tables(doc):
    """The first cells of the tables headed `| Option |` in loadtest.md: `--flag VALUE`, `-x`."""
    found = []
    for kind, _, start, lines in split_blocks(doc.read_text(encoding="utf-8")):
        if kind != "text":
            continue
        header = ""
        for n, line in enumerate(lines):
            if not line.startswith("|"):
                header = ""
            elif not header:
                header = line
            m = re.match(r"^\|\s*((?:`-[^`]*`[,\s]*)+)\|", line)
            if m and re.match(r"^\|\s*Option\s*\|", header):
                for cell in re.findall(r"`([^`]*)`", m.group(1)):
                    found.append((start + n, "loadtest", cell.split()[:1]))
    return found


def usage_text():
    """loadtest's --help text, from the sources it is put together from: the parser's multi-line strings and
    each mode's (its summary and its options' lines)."""
    loadtest = ROOT / "Sources" / "LoadTest"
    files = [loadtest / "CLI" / "CommandLineParser.swift"] + mode_files()
    return "\n".join("\n".join(f.read_text(encoding="utf-8").split('"""')[1::2]) for f in files)


def check_flags():
    loadtest, merge, compare, servers = accepted_flags()
    problems = []
    usage = usage_text()
    for flag in sorted(loadtest | merge):
        if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", usage):
            problems.append(f"Sources/LoadTest/CLI/CommandLineParser.swift: loadtest --help does not name {flag}")
    for doc in doc_files():
        mentions = commands(doc)
        if doc.name == "loadtest.md":
            mentions += option_tables(doc)
        for line, program, args in mentions:
            if program == "loadtest" and args[:1] == ["merge"]:
                known, name = merge, "loadtest merge"
            elif program == "loadtest" and args[:1] == ["compare"]:
                known, name = compare, "loadtest compare"
            elif program == "loadtest":
                known, name = loadtest, "loadtest"
            else:
                known, name = servers[program], program
            for arg in args:
                if not re.match(r"^--?[A-Za-z]", arg):
                    continue
                # Every program reads its flags through ArgumentScanner: `--flag=value` is as good as `--flag value`.
                flag = arg.partition("=")[0].rstrip(".,:)")
                if flag not in known:
                    problems.append(f"{rel(doc)}:{line}: {name} has no option {flag}")
    return problems


# ---------------------------------------------------------------------------------------------------------
# fences

SHELLS = {"sh", "bash", "shell"}


def not_runnable(info):
    """The reason after `not-runnable:` in a fence's info string, '' for the mark without one, or None."""
    m = re.search(r"(?:^|\s)not-runnable:?(.*)$", info)
    return None if m is None else m.group(1).strip()


def check_fences():
    problems = []
    for doc in doc_files():
        for kind, info, start, _ in split_blocks(doc.read_text(encoding="utf-8")):
            words = info.split()
            if kind != "code" or not words:
                continue
            where = f"{rel(doc)}:{start - 1}"
            if words[0] in SHELLS:
                reason = not_runnable(info)
                rest = info[len(words[0]):].strip()
                if reason == "":
                    problems.append(f"{where}: `not-runnable:` needs a reason after it")
                elif rest and reason is None:
                    problems.append(f"{where}: a shell fence takes only `not-runnable: REASON`, not {rest!r}")
            elif words[0] == "swift":
                for word in words[1:]:
                    if word != "no-compile" and not re.match(r"^file=[\w./-]+$", word):
                        problems.append(f"{where}: a swift fence takes `no-compile` and `file=PATH`, not {word!r}")
    return problems


# ---------------------------------------------------------------------------------------------------------
# compile

DEFAULT_IMPORTS = ["Dispatch", "EpollLoop", "FoundationEssentials", "LoopSocket"]
DECLARATION = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|internal|private|fileprivate|final|open|nonisolated)\s+)*"
    r"(class|struct|enum|actor|extension|protocol|func)\b")

PLACEHOLDERS = """\
// Names the documentation's fragments use without declaring them. Never evaluated: the samples are
// compiled, not run.
import EpollLoop
import FoundationEssentials
import LoopSocket

func placeholder<T>() -> T { fatalError("documentation samples are compiled, not run") }

final class PlaceholderDelegate: GCDAsyncSocketDelegate {}

nonisolated(unsafe) let group: EventLoopGroup = placeholder()
nonisolated(unsafe) let loop: EventLoop = placeholder()
nonisolated(unsafe) let delegate = PlaceholderDelegate()
nonisolated(unsafe) let d = PlaceholderDelegate()
nonisolated(unsafe) let sock: GCDAsyncSocket = placeholder()
nonisolated(unsafe) let socket: GCDAsyncSocket = placeholder()
nonisolated(unsafe) let err: (any Error)? = placeholder()
nonisolated(unsafe) let request = Data()
nonisolated(unsafe) let identity: TLSIdentity = placeholder()
nonisolated(unsafe) let p12Data = Data()
nonisolated(unsafe) let pinned: [UInt8] = []
nonisolated(unsafe) let connection: AsyncSocket = placeholder()
nonisolated(unsafe) let listener: AsyncListener = placeholder()
func log(_ error: any Error) {}
"""


def split_sample(lines, start):
    """(imports, declarations, statements) of a block; the last two as (page line, text) pairs."""
    imports, declarations, statements = [], [], []
    depth, in_declaration, opened, pending = 0, False, False, []
    for n, line in enumerate(lines, start):
        if in_declaration:  # until its body's braces balance (a signature may take several lines)
            declarations.append((n, line))
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            if opened and depth <= 0:
                in_declaration, depth = False, 0
            continue
        if re.match(r"^import\s+\w+", line):
            imports.append(line.split("//")[0].split()[1])
        elif line.startswith("@") and not DECLARATION.match(line):  # an attribute on a line of its own
            pending.append((n, line))
        elif DECLARATION.match(line):
            if not re.match(r"^(?:@\S+\s+)*(?:public|internal|private|fileprivate)\b", line):
                line = re.sub(r"^((?:@\S+\s+)*)", r"\1private ", line)
            declarations.extend(pending + [(n, line)])
            pending = []
            depth = line.count("{") - line.count("}")
            opened = "{" in line
            in_declaration = depth > 0 or not opened
        else:
            statements.extend(pending + [(n, line)])
            pending = []
    return imports, declarations, statements + pending


def samples():
    for doc in doc_files():
        n = 0
        for kind, info, start, lines in split_blocks(doc.read_text(encoding="utf-8")):
            words = info.split()
            if kind != "code" or words[:1] != ["swift"]:
                continue
            n += 1
            yield doc, n, start, lines, "no-compile" in words[1:]


PACKAGE = """\
// swift-tools-version:6.2
// Generated by scripts/check-docs.py: the documentation's Swift samples, one file per block.
import PackageDescription

let package = Package(
    name: "DocSamples",
    dependencies: [.package(path: "../..")],
    targets: [
        .target(
            name: "DocSamples",
            dependencies: [
                .product(name: "EpollLoop", package: "IDENTITY"),
                .product(name: "LoopSocket", package: "IDENTITY"),
                .product(name: "LoadTest", package: "IDENTITY"),
            ],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
"""


def check_compile():
    package = ROOT / ".build" / "doc-samples"
    sources = package / "Sources" / "DocSamples"
    sources.mkdir(parents=True, exist_ok=True)
    for old in sources.glob("*.swift"):
        old.unlink()
    (package / "Package.swift").write_text(PACKAGE.replace("IDENTITY", ROOT.name.lower()))
    (sources / "Placeholders.swift").write_text(PLACEHOLDERS)
    origin = {}
    for doc, n, start, lines, skip in samples():
        if skip:
            continue
        name = re.sub(r"\W", "_", doc.stem) + f"_{n}"
        imports, declarations, statements = split_sample(lines, start)
        out = [(None, f"// {rel(doc)}, the ```swift block at line {start}")]
        out += [(None, f"import {m}") for m in (imports or DEFAULT_IMPORTS)]
        out += declarations + [(None, f"private func sample_{name}() async throws {{")]
        out += [(n, "    " + line) for n, line in statements] + [(None, "}")]
        (sources / f"{name}.swift").write_text("\n".join(text for _, text in out) + "\n")
        origin[f"{name}.swift"] = (doc, start, [n for n, _ in out])
    result = subprocess.run(["swift", "build", "--package-path", str(package)], capture_output=True, text=True)
    if result.returncode == 0:
        return []
    problems = []
    output = result.stdout + result.stderr
    for m in re.finditer(r"^\S*/Sources/DocSamples/(\w+\.swift):(\d+):\d+: error: (.*)$", output, re.M):
        file, line, message = m.group(1), int(m.group(2)), m.group(3)
        if file in origin:
            doc, start, lines = origin[file]
            page_line = lines[line - 1] if 0 < line <= len(lines) else None
            problems.append(f"{rel(doc)}:{page_line or start}: {message}")
        else:
            problems.append(f"{file}:{line}: {message}")
    if not problems:
        problems.append("the samples' package did not build:\n" + output[-4000:])
    return sorted(set(problems))


# ---------------------------------------------------------------------------------------------------------

def main(argv):
    checks = {"links": check_links, "flags": check_flags, "fences": check_fences, "compile": check_compile}
    chosen = argv or list(checks)
    unknown = [c for c in chosen if c not in checks]
    if unknown:
        print(f"unknown check {unknown[0]}: use {', '.join(checks)}", file=sys.stderr)
        return 2
    failed = False
    for name in chosen:
        problems = checks[name]()
        print(f"{name}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        for p in problems:
            print("  " + p)
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
