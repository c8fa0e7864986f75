#!/usr/bin/env python3
"""Code in docs compiles: every ```cpp block of README.md, docs/*.md and
examples/README.md, checked with g++ -std=c++20 -fsyntax-only -Wall -Wextra
-Werror against include/ (nothing is built or linked).

A block is one of:

  unit      it defines a function at namespace scope (a column-0 line
            `TYPE NAME(PARAMS) {`, main() included): compiled as a
            translation unit of its own, exactly as written - its own
            #include lines and `using` must be enough, as for a reader who
            copies it.
  fragment  anything else (statements, declarations): compiled inside a
            generated wrapper - every public header under include/mdcast
            (the verbs ones only where rdma-core is installed), the block's
            own #include lines, `using namespace mdcast;`, and the block as
            the body of a function; a variable it declares and does not use
            is no error there (-Wno-unused-variable: the prose uses it).
  skip      marked `<!-- snippet: skip (why) -->`: not compiled; the reason
            is required and printed with the block's file:line.

Names a block uses but does not declare (a variable the prose introduces, an
earlier block's object) come from the doc itself, in an HTML comment right
before the block (only blank lines or other such comments between; invisible
when rendered):

  <!-- snippet-context: bool running = false; -->

Its code goes before the block: into the function body of a fragment, at the
top of a unit. `<!-- snippet: unit -->` / `<!-- snippet: fragment -->` force
the kind. Errors point at the doc's own lines (#line directives).

  scripts/check-doc-snippets.py [--keep DIR] [--list] [REPO]

Exits 1 naming the file, line and compiler error of every block that does
not compile (or an annotation that cannot be read); 0 otherwise. CXX picks
the compiler (g++).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

FENCE_OPEN = re.compile(r'^(\s*)```\s*(cpp|c\+\+|cxx|cc)\s*$')
FENCE_ANY = re.compile(r'^\s*```')
FENCE_CLOSE = re.compile(r'^\s*```\s*$')
# A function defined at namespace scope: `TYPE NAME(PARAMS) [const] [noexcept] {`
# at column 0, not a statement (if/while/...), not a lambda's parameter list.
FUNC_DEF = re.compile(
    r'^(?!(?:if|while|for|switch|return|else|do|case|struct|class|union|enum|namespace)\b)'
    r'[A-Za-z_][\w:<>,\s*&]*?[\s*&]((?:\w+::)*~?\w+|operator\S+)\s*\([^;\[\]]*\)\s*'
    r'(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>]+\s*)?\{')
ANNOTATION = re.compile(r'^\s*snippet(-context)?\s*:\s*(.*)$', re.S)


class Block:
    def __init__(self, path, line, code, notes):
        self.path, self.line, self.code = path, line, code  # line: the opening fence's
        self.context = []     # (line, code) from snippet-context comments
        self.skip = None      # the reason
        self.kind = None      # forced kind
        self.errors = []      # annotations that cannot be read
        for note_line, text in notes:
            m = ANNOTATION.match(text)
            if not m:
                continue
            body = m.group(2).strip()
            if m.group(1):
                if not body:
                    self.errors.append(f'{path}:{note_line}: empty snippet-context')
                self.context.append((note_line, body))
            elif re.match(r'skip\b', body):
                why = re.fullmatch(r'skip\s*\((.+)\)', body, re.S)
                if not why or not why.group(1).strip():
                    self.errors.append(f'{path}:{note_line}: a skip needs its reason: <!-- snippet: skip (why) -->')
                else:
                    self.skip = ' '.join(why.group(1).split())
            elif body in ('unit', 'fragment'):
                self.kind = body
            else:
                self.errors.append(f'{path}:{note_line}: unknown annotation "snippet: {body}" '
                                   '(skip (why), unit, fragment, or snippet-context: CODE)')
        if self.kind is None:
            self.kind = 'unit' if any(FUNC_DEF.match(l) for l in code) else 'fragment'

    def where(self):
        return f'{self.path}:{self.line}'


def read_blocks(repo, rel):
    """The C++ blocks of one markdown file, each with the comments right before it."""
    with open(os.path.join(repo, rel), encoding='utf-8') as f:
        lines = f.read().split('\n')
    blocks, notes, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = FENCE_OPEN.match(line)
        if m:
            indent = len(m.group(1))
            start, i, code = i + 1, i + 1, []
            while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
                code.append(lines[i][indent:] if lines[i][:indent].strip() == '' else lines[i])
                i += 1
            blocks.append(Block(rel, start, code, notes))
            notes = []
            i += 1
            continue
        if FENCE_ANY.match(line):  # another language's block: skip over it
            i += 1
            while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
                i += 1
            notes = []
            i += 1
            continue
        if line.lstrip().startswith('<!--'):
            start, text = i + 1, line.lstrip()[4:]
            while '-->' not in text and i + 1 < len(lines):
                i += 1
                text += '\n' + lines[i]
            notes.append((start, text.split('-->', 1)[0]))
        elif line.strip():
            notes = []
        i += 1
    return blocks


def project_headers(repo, verbs):
    hdrs = sorted(os.path.relpath(p, os.path.join(repo, 'include'))
                  for p in glob.glob(os.path.join(repo, 'include/mdcast/**/*.hpp'), recursive=True))
    return [h for h in hdrs if verbs or '/verbs/' not in h]


def line_directive(n, path):
    return f'#line {n} "{path}"'


def source_of(block, headers):
    out = [f'// {block.where()}: {block.kind} (generated by scripts/check-doc-snippets.py)']
    if block.kind == 'unit':
        for n, code in block.context:
            out += [line_directive(n, block.path), code]
        out += [line_directive(block.line + 1, block.path)] + block.code
        return '\n'.join(out) + '\n'
    out += [f'#include <{h}>' for h in headers]
    includes = [(n, l) for n, l in enumerate(block.code) if l.lstrip().startswith('#include')]
    for n, l in includes:
        out += [line_directive(block.line + 1 + n, block.path), l]
    out += ['#line 1 "<wrapper>"', 'using namespace mdcast;', 'void mdcast_doc_snippet() {']
    for n, code in block.context:
        out += [line_directive(n, block.path), code]
    out.append(line_directive(block.line + 1, block.path))
    # the #include lines stay as blank lines, so the rest keeps its doc line numbers
    out += ['' if l.lstrip().startswith('#include') else l for l in block.code]
    out.append('}')
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('repo', nargs='?', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('--keep', metavar='DIR', help='write the generated sources there (else a scratch directory)')
    ap.add_argument('--list', action='store_true', help='list the blocks and their kinds, compile nothing')
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    t0 = time.monotonic()

    docs = ['README.md'] + sorted(os.path.relpath(p, repo) for p in glob.glob(os.path.join(repo, 'docs/*.md'))) \
        + ['examples/README.md']
    blocks = [b for d in docs if os.path.exists(os.path.join(repo, d)) for b in read_blocks(repo, d)]
    bad_notes = [e for b in blocks for e in b.errors]
    for e in bad_notes:
        print(f'check-doc-snippets: {e}')

    verbs = os.path.exists('/usr/include/infiniband/verbs.h')
    headers = project_headers(repo, verbs)
    cxx = shlex.split(os.environ.get('CXX') or 'g++')
    flags = ['-std=c++20', '-fsyntax-only', '-Wall', '-Wextra', '-Werror', '-I' + os.path.join(repo, 'include'),
             '-DFMT_SHARED'] + (['-DMDCAST_HAVE_VERBS=1'] if verbs else [])
    # A fragment's declarations are the prose's to use: a name it declares
    # and does not use again is no error there (every other warning is).
    fragment_flags = ['-Wno-unused-variable', '-Wno-unused-but-set-variable']

    todo = [b for b in blocks if not b.skip]
    for b in blocks:
        if b.skip:
            print(f'check-doc-snippets: {b.where()}: skipped: {b.skip}')
        elif args.list:
            ctx = f', context from line {", ".join(str(n) for n, _ in b.context)}' if b.context else ''
            print(f'check-doc-snippets: {b.where()}: {b.kind}{ctx}')
    if args.list:
        return 1 if bad_notes else 0

    scratch = None
    outdir = args.keep
    if outdir:
        os.makedirs(outdir, exist_ok=True)
        for old in glob.glob(os.path.join(outdir, '[0-9][0-9][0-9]-*.cpp')):
            os.remove(old)
    else:
        scratch = tempfile.TemporaryDirectory(prefix='doc-snippets.')
        outdir = scratch.name

    def compile_block(i_b):
        i, b = i_b
        src = os.path.join(outdir, f'{i:03d}-{b.path.replace("/", "_")}-{b.line}.cpp')
        with open(src, 'w', encoding='utf-8') as f:
            f.write(source_of(b, headers))
        extra = fragment_flags if b.kind == 'fragment' else []
        p = subprocess.run(cxx + flags + extra + [src], cwd=repo, capture_output=True, text=True)
        return b, src, p.returncode, (p.stdout + p.stderr).strip()

    failed = 0
    jobs = max(1, min(len(todo), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for b, src, rc, out in pool.map(compile_block, enumerate(todo)):
            ctx = f' (context from line {", ".join(str(n) for n, _ in b.context)})' if b.context else ''
            if rc == 0:
                print(f'check-doc-snippets: {b.where()}: {b.kind}{ctx}: ok')
                continue
            failed += 1
            print(f'check-doc-snippets: {b.where()}: {b.kind}{ctx}: DOES NOT COMPILE'
                  + (f' ({src})' if args.keep else ''))
            print('\n'.join('    ' + l for l in out.split('\n')))
    if scratch:
        scratch.cleanup()

    units = sum(1 for b in todo if b.kind == 'unit')
    skipped = len(blocks) - len(todo)
    summary = (f'{len(blocks)} C++ blocks in {len(docs)} docs: {units} compiled as translation units, '
               f'{len(todo) - units} wrapped as fragments, {skipped} skipped; '
               f'{"with" if verbs else "without"} the verbs headers; {time.monotonic() - t0:.1f} s')
    if failed or bad_notes:
        print(f'check-doc-snippets: FAILED: {failed} block(s) do not compile, {len(bad_notes)} bad annotation(s); '
              f'{summary}')
        return 1
    print(f'check-doc-snippets: ok, {summary}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
