#!/usr/bin/env python3
"""Fails when a function in relpos's C++ sources is longer than 80 lines; lists each one.

What it scans: every tracked *.h, *.cpp, *.cu, *.cuh and *.inc outside tests/ (the library, the
CLI, the benches; a test case is a list of checks, not a function to split). Pass paths to scan
only those. Each file is first run through clang-format with the repo's .clang-format, so the
count is that of the code as CI formats it.

How it counts: a function is the block that follows a declaration at namespace or class scope
whose header holds a parameter list: free functions, methods, constructors (initializer list
included), operators, and lambdas written at namespace scope (a registration). Its length runs
from the line with its name (a lambda: the line its statement starts) to its closing brace,
inclusive. Blocks inside a function (lambdas, local classes) count toward it and are not
reported on their own. Comments, string and character literals and preprocessor lines are
blanked before braces are matched.

Limits: a scan of braces, not a parser. Braces unbalanced across #if branches throw the matching
off for the rest of that file; a macro that expands to a function header is named by the macro.

Exceptions: tools/function-length-exceptions.txt lists "path name" pairs (one a line, "#"
comments) reported as allowed rather than failing; the goal is an empty list.
Exit status: 1 when any function not excepted is over the limit, 0 otherwise.
"""
import os
import re
import subprocess
import sys

LIMIT = 80
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXCEPTIONS = os.path.join(ROOT, "tools", "function-length-exceptions.txt")
SUFFIXES = (".h", ".cpp", ".cu", ".cuh", ".inc")

TOKEN = re.compile(r"[A-Za-z_~][A-Za-z0-9_]*|::|->|[(){}\[\];:<>=,]|\S")
QUALIFIERS = {"const", "override", "final", "noexcept", "mutable", "volatile", "try"}
SKIP_BEFORE_PARAMS = {"decltype", "alignas", "__attribute__", "__launch_bounds__", "noexcept",
                      "requires", "sizeof"}


def blank(text):
    """Comments, string/char literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and text[i:i + 200].lstrip(" \t")[:1] == "#":
            # A preprocessor directive, with its backslash continuations.
            j = i
            while j < n:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                j = k
                break
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', text[i:i + 40])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i + raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
            continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + c)
            i = j
            continue
        out.append(c)
        line_start = c == "\n"
        i += 1
    return "".join(out)


def tokens(text):
    """(token, line) pairs of blanked text; lines count from 1."""
    result = []
    for number, line in enumerate(text.split("\n"), start=1):
        result.extend((m.group(0), number) for m in TOKEN.finditer(line))
    return result


def matching(toks, i, open_tok, close_tok):
    """Index of the token closing the group opened at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] == open_tok:
            depth += 1
        elif toks[j][0] == close_tok:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def after_template(header):
    """Index of the first token after a leading template parameter list."""
    if not (len(header) > 1 and header[0][0] == "template" and header[1][0] == "<"):
        return 0
    depth = 0
    for i in range(1, len(header)):
        depth += {"<": 1, ">": -1}.get(header[i][0], 0)
        if depth == 0:
            return i + 1
    return len(header)


def variable_name(header):
    """(name, line) of the variable a header initializes with '=', or None."""
    paren = angle = 0
    for j in range(after_template(header), len(header)):
        tok = header[j][0]
        if tok in ("(", "operator") and paren == 0:
            return None
        paren += {"(": 1, ")": -1}.get(tok, 0)
        if paren == 0:
            angle += {"<": 1, ">": -1}.get(tok, 0)
        if tok == "=" and paren == 0 and angle <= 0 and j > 0:
            return header[j - 1]
    return None


def function_name(header):
    """(name, line) of the function a header declares, or None when it declares none."""
    paren = angle = 0
    for j in range(after_template(header), len(header)):
        tok = header[j][0]
        if tok == "operator" and paren == 0:
            k = j + 1
            if k + 1 < len(header) and header[k][0] == "(" and header[k + 1][0] == ")":
                k += 2  # operator()
            while k < len(header) and header[k][0] != "(":
                k += 1
            start = j
            while start > 1 and header[start - 1][0] == "::":
                start -= 2
            return "".join(t for t, _ in header[start:k]), header[start][1]
        if tok == "(":
            if paren == 0 and angle == 0 and j > 0:
                prev = header[j - 1][0]
                if re.match(r"[A-Za-z_~]", prev) and prev not in SKIP_BEFORE_PARAMS:
                    start = j - 1
                    while start > 1 and header[start - 1][0] == "::":
                        start -= 2
                    return "".join(t for t, _ in header[start:j]), header[start][1]
            paren += 1
        elif tok == ")":
            paren -= 1
        elif tok == "<" and paren == 0:
            angle += 1
        elif tok == ">" and paren == 0 and angle > 0:
            angle -= 1
    return None


def member_brace_init(statement, toks, i):
    """Whether the '{' at toks[i] initializes a member in a constructor's initializer list."""
    prev = toks[i - 1][0]
    if not re.match(r"[A-Za-z_]", prev) or prev in QUALIFIERS:
        return False
    paren = 0
    for tok, _ in statement:
        paren += {"(": 1, ")": -1}.get(tok, 0)
        if tok == ":" and paren == 0:
            return True
    return False


def lambda_before(toks, i):
    """Whether the '{' at toks[i] opens a lambda's body."""
    j = i - 1
    while j >= 0 and toks[j][0] in ("mutable", "noexcept", "constexpr"):
        j -= 1
    if j >= 0 and toks[j][0] == "]":
        return True
    # A trailing return type: [..](..) -> T {
    k = j
    while k >= 0 and toks[k][0] not in ("->", ")", ";", "{", "}", "("):
        k -= 1
    if k >= 0 and toks[k][0] == "->":
        j = k - 1
    return j >= 0 and toks[j][0] == ")"


def functions(text):
    """(name, first line, last line) of every function of a file's text."""
    toks = tokens(blank(text))
    found = []
    statement = []  # the tokens of the current declaration at this scope
    depth = 0  # parentheses and brackets open in the statement
    i = 0
    while i < len(toks):
        tok, line = toks[i]
        if tok in ("(", "["):
            depth += 1
        elif tok in (")", "]"):
            depth -= 1
        if tok == "{":
            end = matching(toks, i, "{", "}")
            if depth > 0:
                if lambda_before(toks, i):  # a lambda in a statement at namespace scope
                    start = next((t for t in statement if t[0] not in ("public", "private",
                                                                           "protected", ":")),
                                 toks[i])
                    found.append(("lambda in " + start[0], start[1], toks[end][1]))
                statement.append(toks[i])
                i = end + 1
                continue
            words = {t for t, _ in statement}
            variable = variable_name(statement)
            named = variable if lambda_before(toks, i) else None
            if variable is None:
                named = function_name(statement)
            if "enum" in words:
                statement.append(toks[i])
                i = end + 1
                continue
            if named is None and variable is None and words & {"namespace", "class", "struct",
                                                               "union", "extern"}:
                statement, depth = [], 0  # a scope: scan inside it
                i += 1
                continue
            if named is not None and not member_brace_init(statement, toks, i):
                found.append((named[0], named[1], toks[end][1]))
                statement, depth = [], 0
            else:
                statement.append(toks[i])  # an initializer: skip it
            i = end + 1
            continue
        if tok == "}" or (tok == ";" and depth == 0):
            statement, depth = [], 0
        elif tok == ":" and statement and statement[-1][0] in ("public", "private", "protected"):
            statement = []
        else:
            statement.append(toks[i])
        i += 1
    return found


def formatted(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    try:
        result = subprocess.run(["clang-format", "--style=file", "--assume-filename=" + path],
                                input=source, capture_output=True, text=True, cwd=ROOT,
                                check=True)
        return result.stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"[check-function-length] clang-format failed on {path}: {error}")


def sources():
    listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT,
                            check=True).stdout.split()
    return [p for p in listed if p.endswith(SUFFIXES) and not p.startswith("tests/")]


def exceptions():
    allowed = set()
    if os.path.exists(EXCEPTIONS):
        with open(EXCEPTIONS, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                line = line.split("#", 1)[0].split()
                if not line:
                    continue
                if len(line) != 2:
                    sys.exit(f"[check-function-length] {EXCEPTIONS} line {number}: "
                             "expected 'path name'")
                allowed.add(tuple(line))
    return allowed


def main(argv):
    paths = argv or sources()
    allowed = exceptions()
    offenders, excused = [], []
    for path in paths:
        for name, first, last in functions(formatted(os.path.join(ROOT, path))):
            length = last - first + 1
            if length > LIMIT:
                entry = f"{path}:{first} {name} {length}"
                (excused if (path, name) in allowed else offenders).append(entry)
    for entry in excused:
        print(f"[check-function-length] allowed for now: {entry}")
    if offenders:
        print(f"[check-function-length] functions over {LIMIT} lines (split them into named "
              "steps):")
        for entry in offenders:
            print("  " + entry)
        return 1
    print(f"[check-function-length] {len(paths)} files, no function over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
