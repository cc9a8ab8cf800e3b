"""What the manual documents (README.md and every page of docs/), read mechanically for tests/core/test_readme.py
and tests/blender/test_readme.py.

No Blender and no EnvFX import here: plain text and ``ast``. Loaded by file path (the test folders are not packages).
Every function that reads text takes one document; ``all_text()`` is the README and the pages joined, so a check
over it holds for whatever page a sentence, example or table moves to.
"""

from __future__ import annotations

import ast
import glob
import io
import os
import re
import shlex
import tokenize
import unicodedata
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
FEATURE_PAGES = {"bend": "docs/bend.md", "wind": "docs/wind.md", "snow": "docs/snow.md",
                 "gasgiant": "docs/gasgiant.md", "mips": "docs/mips.md", "vat": "docs/vat.md"}


def text() -> str:
    """README.md."""
    return read("README.md")


def read(path: str) -> str:
    """A document by its path relative to the repository root."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        return fh.read()


def pages() -> list[str]:
    """README.md and every docs/*.md page (paths relative to the repository root)."""
    return ["README.md"] + sorted(os.path.relpath(p, ROOT).replace(os.sep, "/")
                                  for p in glob.glob(os.path.join(DOCS, "*.md")))


def all_text(exclude: tuple = ()) -> str:
    """The README and the pages joined (each ends with a newline, so no fence or paragraph runs into the next)."""
    return "\n".join(read(p).rstrip("\n") + "\n" for p in pages() if p not in exclude)


# --- links ---------------------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def links(doc: str) -> list[str]:
    """Targets of the Markdown links and pictures in the prose (not in code blocks)."""
    return _LINK.findall(prose(doc))


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs makes it (Python-Markdown's toc slugify; GitHub's agrees for plain headings)."""
    value = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def anchors(doc: str) -> set:
    """The anchors of a document's headings (a repeated heading gets _1, _2, ... as in MkDocs)."""
    out = set()
    for m in re.finditer(r"^#{1,6} +(.+?) *#*$", prose(doc), re.M):
        name = slug(re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda x: x.group(1) or "", m.group(1)))
        base, n = name, 0
        while name in out:
            n += 1
            name = f"{base}_{n}"
        out.add(name)
    return out


# --- blocks, prose, backticks ------------------------------------------------------------------------------

@dataclass
class Block:
    lang: str
    body: str
    line: int  # line of the opening fence (1-based)
    section: str


_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(doc: str | None = None) -> list[Block]:
    doc = all_text() if doc is None else doc
    found = []
    for m in _FENCE.finditer(doc):
        line = doc.count("\n", 0, m.start()) + 1
        found.append(Block(m.group(1), m.group(2), line, section_at(doc, m.start())))
    return found


def section_at(doc: str, pos: int) -> str:
    """The title of the ``##``/``###`` heading ``pos`` is under."""
    heads = [m for m in re.finditer(r"^#{2,3} (.+)$", doc, re.M) if m.start() <= pos]
    return heads[-1].group(1).strip() if heads else ""


def prose(doc: str | None = None) -> str:
    """A document without its fenced code blocks (their lines kept empty, so paragraphs stay apart)."""
    doc = all_text() if doc is None else doc
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), doc)


def backticks(fragment: str) -> list[str]:
    """Inline code spans, line breaks inside them made single spaces."""
    return [re.sub(r"\s*\n\s*", " ", t) for t in re.findall(r"`([^`]+)`", fragment)]


def paragraphs(doc: str | None = None) -> list[str]:
    """Prose split at blank lines and at list items."""
    out = []
    for para in re.split(r"\n\s*\n", prose(doc)):
        out.extend(p for p in re.split(r"\n(?=\s*[-*] |\d+\. )", para) if p.strip())
    return out


def sentences(paragraph: str) -> list[str]:
    """A paragraph cut at '. ' (a period outside code spans followed by white space)."""
    spans = []

    def hide(m):
        spans.append(m.group(0))
        return f"\0{len(spans) - 1}\0"

    hidden = re.sub(r"`[^`]+`", hide, paragraph)
    return [re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], s) for s in re.split(r"\.\s+", hidden)]


# --- module functions named in the prose -------------------------------------------------------------------

_MODULE_TOKEN = re.compile(r"^(core|operators)[./](\w+)(?:\.py)?$")
_DOTTED = re.compile(r"^(core|operators)[./](\w+)(?:\.py)?[.:]([A-Za-z_]\w*)(.*)$", re.S)
_CALLISH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?(\(.*\))?$", re.S)


@dataclass
class ApiRef:
    module: str          # "core.gasgiant", "operators.wind"
    name: str            # "run_bake", or "BendParams.validate" (module "core.*": a class of some core module)
    call: str            # the code span as written ("run_bake(params, folder)")
    sentence: str = field(repr=False, default="")
    klass: str = ""      # a class named before it in the sentence (a method of it when the module lacks the name)


def api_refs(doc: str | None = None) -> list[ApiRef]:
    """Names the prose gives as Python API of a module: ``core.wind.bake_wind_data(...)``, ``core/wind.py:x``,
    and in a sentence that names a module (``core/gasgiant.py`` has ...) or a dotted call, the bare names and calls
    after it (``preset(name)``, ``Simulation(params)`` with ``step(n)``: a method of the class named before).
    ``Class.method()`` anywhere names a class of a core module (module "core.*")."""
    refs = []
    for para in paragraphs(doc):
        for sentence in sentences(para):
            module, klass = None, None
            for token in backticks(sentence):
                token = token.strip()
                m = _MODULE_TOKEN.match(token)
                if m:
                    module, klass = f"{m.group(1)}.{m.group(2)}", None
                    continue
                m = _DOTTED.match(token)
                if m:
                    mod = f"{m.group(1)}.{m.group(2)}"
                    refs.append(ApiRef(mod, m.group(3), m.group(3) + m.group(4), sentence))
                    # a dotted call opens a scope for the bare names after it; a dotted name alone does not
                    module, klass = (mod, None) if m.group(4).startswith("(") else (None, None)
                    continue
                if re.match(r"^[A-Z]\w+\.\w+\(", token) and module is None:
                    refs.append(ApiRef("core.*", token.split("(")[0], token, sentence))
                    continue
                if module and _CALLISH.match(token) and _parses(token):
                    name = token.split("(")[0]
                    owner = (klass or "") if not name[0].isupper() else ""
                    refs.append(ApiRef(module, name, token, sentence, owner))
                    if name[0].isupper() and "(" in token:
                        klass = name
    return refs


def _parses(token: str) -> bool:
    try:
        ast.parse(token, mode="eval")
        return True
    except SyntaxError:
        return False


def call_shape(call: str):
    """(positional count, keyword names, nested calls) of a call span, or None when it is a bare name or its
    arguments are elided (``bake(...)``)."""
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call):
        return None
    if any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in node.args):
        return None
    nested = [ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.Call) and n is not node
              and isinstance(n.func, ast.Name)]
    return len(node.args), [k.arg for k in node.keywords], nested


# --- operators and settings ---------------------------------------------------------------------------------

_OP_CALL = re.compile(r"bpy\.ops\.envfx\.(\w+)\(([^()]*)\)")
_OP_NAME = re.compile(r"(?<![\w.])(?:bpy\.ops\.)?envfx\.([a-z]+_[a-z_]+)\b(?!\.)")


@dataclass
class OpRef:
    name: str
    kwargs: dict  # keyword -> list of literal values (several for 'A'|'B'); [] for non-literal values (...)
    where: str


def operator_refs(doc: str | None = None) -> list[OpRef]:
    """Every ``bpy.ops.envfx.X(...)`` (code and prose) and every ``envfx.x_y`` operator id in the prose, with the
    keyword arguments and the values shown (``preset='TREE'|'BUSH'`` gives both values)."""
    doc = all_text() if doc is None else doc
    refs = []
    for m in _OP_CALL.finditer(doc):
        kwargs = {}
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            key, _, value = part.partition("=")
            values = []
            for alt in value.split("|"):
                try:
                    lit = ast.literal_eval(alt.strip())
                except (ValueError, SyntaxError):
                    continue
                if lit is not Ellipsis:
                    values.append(lit)
            kwargs[key.strip()] = values
        refs.append(OpRef(m.group(1), kwargs, m.group(0)))
    for token in backticks(prose(doc)):
        m = re.fullmatch(r"envfx\.([a-z]+_[a-z_]+)", token.strip())
        if m:
            refs.append(OpRef(m.group(1), {}, token))
    return refs


@dataclass
class SettingLine:
    """One line of a ``python`` block that touches ``scene.envfx`` / ``obj.envfx`` settings."""
    owner: str                     # "Scene" or "Object"
    group: tuple                   # ("bend",), ("wind",), () for Object.envfx itself
    assigned: dict                 # property -> literal value, or ... when not a literal
    comment: str
    source: str
    ops: list                      # operator names called on the line


_ROOTS = {"scene": "Scene", "obj": "Object", "object": "Object"}


def _chain(node):
    """``a.b.c`` -> ["a", "b", "c"] (None when not a plain attribute chain)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve(chain, aliases):
    """A chain like scene.envfx.wind.strength, or s.strength with s an alias -> (owner, group, attr)."""
    if chain[0] in aliases:
        owner, group = aliases[chain[0]]
        rest = chain[1:]
    elif chain[0] in _ROOTS and len(chain) > 1 and chain[1] == "envfx":
        owner, group, rest = _ROOTS[chain[0]], (), chain[2:]
    else:
        return None
    return owner, group, rest


def setting_lines(doc: str | None = None) -> list[SettingLine]:
    out = []
    for block in blocks(doc):
        if block.lang != "python":
            continue
        out.extend(_block_settings(block.body))
    return out


def _block_settings(body: str) -> list[SettingLine]:
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(body).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string[1:].strip()
    tree = ast.parse(body)
    lines = {}
    aliases = {}
    for stmt in tree.body:
        n = stmt.lineno
        entry = lines.setdefault(n, {"assigned": {}, "ops": [], "group": None, "src": body.splitlines()[n - 1]})
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):  # an alias: s = scene.envfx.mips
                ch = _chain(stmt.value)
                res = _resolve(ch, aliases) if ch else None
                if res:
                    owner, group, rest = res
                    aliases[target.id] = (owner, (*group, *rest))
                    entry["group"] = (owner, (*group, *rest))
                continue
            targets = target.elts if isinstance(target, ast.Tuple) else [target]
            values = stmt.value.elts if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                else [stmt.value]
            for t, v in zip(targets, values):
                ch = _chain(t)
                res = _resolve(ch, aliases) if ch else None
                if not res:
                    continue
                owner, group, rest = res
                *sub, attr = rest
                entry["group"] = (owner, (*group, *sub))
                try:
                    value = ast.literal_eval(v)
                except ValueError:
                    value = ...
                entry["assigned"][attr] = value
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                ch = _chain(node.func)
                if ch and ch[:3] == ["bpy", "ops", "envfx"]:
                    entry["ops"].append(ch[3])
    # a comment-only line continues the comment of the statement above it
    last = None
    for n in range(1, len(body.splitlines()) + 1):
        if n in lines:
            last = n
            lines[n]["comment"] = comments.get(n, "")
        elif n in comments and last is not None and body.splitlines()[n - 1].strip().startswith("#"):
            lines[last]["comment"] += " " + comments[n]
    out = []
    for _n, e in sorted(lines.items()):
        if e["group"] is None and not e["ops"]:
            continue
        owner, group = e["group"] if e["group"] else ("Scene", ())
        out.append(SettingLine(owner, group, e["assigned"], e.get("comment", ""), e["src"], e["ops"]))
    return out


def comment_names(comment: str) -> tuple[list, list, list]:
    """From a settings comment: (quoted upper-case enum values, setting names, ``s.name`` references).

    Setting names are snake_case words with an underscore that are not quoted, not part of a dotted name, not
    followed by ``=`` or ``..``, and every word of a comment that is only a list of names (``also a, b, c``)."""
    enums = re.findall(r"'([A-Z][A-Z0-9_]*)'", comment)
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", " ", comment)
    refs = re.findall(r"(?<![\w.])[a-z]\.([a-z_]\w*)", unquoted)
    names = [w for w in re.findall(r"(?<![\w.])([a-z][a-z0-9]*_[a-z0-9_]+)(?![\w.=(]|\.\.)", unquoted)]
    if re.fullmatch(r"(also )?[a-z_]+(, [a-z_]+)+,?", comment.strip()):
        names += [w for w in re.findall(r"[a-z_]+", comment.removeprefix("also ")) if w not in names]
    return enums, names, refs


# --- command line ------------------------------------------------------------------------------------------

@dataclass
class CliExample:
    argv: list       # after "envfx"
    source: str
    synopsis: bool   # a usage summary (a|b alternatives, placeholders), not a runnable command


def cli_examples(doc: str | None = None) -> list[CliExample]:
    """Every ``blender ... -c envfx ...`` command: lines of code blocks (``\\`` continued lines joined, comments
    and pipes dropped, ``[...]`` optional parts kept) and inline code spans."""
    doc = all_text() if doc is None else doc
    commands = []
    for block in blocks(doc):
        if block.lang == "python":
            continue
        body = re.sub(r"\\\n", " ", block.body)
        current = None
        for line in body.splitlines():
            if re.match(r"\s*blender .*-c envfx", line):
                current = [line]
                commands.append(current)
            elif current is not None and line.startswith("    ") and line.strip():
                current.append(line)  # an indented continuation of a usage summary
            else:
                current = None
    spans = [[t] for t in backticks(prose(doc)) if re.match(r"blender .*-c envfx", t)]
    out = []
    for parts in commands + spans:
        src = " ".join(p.strip() for p in parts)
        line = re.split(r"\s+#\s", src)[0].split(" | ")[0]
        words = shlex.split(line)
        argv = words[words.index("envfx", words.index("-c")) + 1:]
        synopsis = any("|" in w for w in argv)
        argv = [w.strip("[]") for w in argv if w.strip("[]")]
        out.append(CliExample(argv, src, synopsis))
    return out


def option_mentions(doc: str | None = None) -> list[tuple[str | None, str]]:
    """Long options the prose names, with the command a code span puts them after (``bend --apply``) or None.
    Not the options of benchmark scripts and tools (``benchmarks/bench_snow.py --only trails``,
    ``python3 tools/docs.py --strict``, the table of
    docs/benchmarks.md: pass a ``doc`` without that page)."""
    commands = ("info", "bend", "wind", "snow", "gas-giant", "mips")
    out = []
    body = prose(all_text(exclude=("docs/benchmarks.md",)) if doc is None else doc)
    for token in backticks(body):
        if re.match(r"blender |benchmarks/|(python3 )?tools/", token):
            continue  # whole commands: cli_examples; the options of benchmark scripts and tools are theirs
        words = token.split()
        command = words[0] if words and words[0] in commands else None
        for w in words:
            if re.fullmatch(r"--[a-z][a-z0-9-]*", w):
                out.append((command, w))
    return out
