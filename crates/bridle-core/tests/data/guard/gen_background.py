"""Writes background.jsonl: benign background text for the learned detector, taken once from this
repository's own prose (Markdown paragraphs and Rust doc comments, outside the guard's rules and
test data), so ordinary operational English (approvals, overrides, admin scopes, budgets) is seen
as benign. Paragraphs that quote or discuss attacks on models are left out. Run from the
repository root: python3 crates/bridle-core/tests/data/guard/gen_background.py"""
import glob, hashlib, json, os, re

SKIP = re.compile(r"(?i)inject|jailbreak|ignore (all|previous|the previous|your)|system prompt|disregard|\bDAN\b|"
                  r"prompt|attack|canary|exfiltrat|smuggl|obfuscat|guard")
out, seen = [], set()

def add(text, origin):
    text = re.sub(r"[ \t]+", " ", text).strip()
    if len(text) < 60 or SKIP.search(text):
        return
    text = text[:2000]
    h = hashlib.sha256(text.encode()).hexdigest()[:12]
    if h in seen:
        return
    seen.add(h)
    lang = "ko" if re.search(r"[\uac00-\ud7a3]", text) else "en"
    out.append({"id": f"bg-{h}", "text": text, "label": "benign", "category": "document_background",
                "lang": lang, "origin": origin})

for path in sorted(glob.glob("*.md") + glob.glob("crates/*/*.md") + glob.glob("examples/**/*.md", recursive=True)):
    for para in re.split(r"\n\s*\n", open(path, encoding="utf-8").read()):
        if para.lstrip().startswith("|"):
            continue
        add(para, path)

for path in sorted(glob.glob("crates/**/*.rs", recursive=True)):
    if "/guard" in path or "/tests/data/" in path:
        continue
    block = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*//[/!] ?(.*)", line)
        if m:
            block.append(m.group(1))
        elif block:
            add(" ".join(block), path)
            block = []
    if block:
        add(" ".join(block), path)

with open("crates/bridle-core/tests/data/guard/background.jsonl", "w", encoding="utf-8") as f:
    for o in out:
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
print(len(out), sum(len(o["text"]) for o in out))
