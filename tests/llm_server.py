"""A local OpenAI-compatible chat server for tests: scripted answers, latency and faults.

It listens on 127.0.0.1 only. The model alias in each request picks a behaviour:

* ``good``: answers by quoting, verbatim, the paper sentence that shares most words with
  the question (and refuses when the question is adversarial-looking);
* ``sloppy``: the same quote with its first digit changed (a fabricated citation);
* ``fault-429``, ``fault-500``, ``fault-timeout``, ``fault-truncated``, ``fault-malformed``,
  ``fault-empty``: the named fault on the first attempt of each prompt, then a good answer;
* ``down``: always 500; ``garbage``: always unparseable text; ``auth``: always 401;
* ``drifting``: answers as ``good`` does, its answer's text ending "(take N)" on the N-th call of a prompt;
* ``repairable``: prose instead of JSON until the conversation carries a repair turn (the
  bad reply as the assistant turn, then a user turn), then a good answer;
* ``truncating``: a reply cut off mid-JSON with ``finish_reason: length`` unless the request
  allows at least 1000 output tokens (``max_tokens``).

``ScriptedLLM(fault_rate=0.05)`` also faults the first attempt of that share of prompts (chosen by
the prompt's hash, so the same prompts in every run) under any alias: a 429 or a 500.

The first user message is the prompt: a repair call adds turns after it, and faults and
attempt counts follow the prompt, not the turns.

Judge prompts (they hold ``<<<ANSWER``) get verdicts: ``judge-*`` aliases score by word
overlap with the expected answer; ``judge-saturated`` gives 5 to everything;
``judge-flaky`` changes its mind between calls; ``judge-broken`` returns an invalid
verdict; ``judge-refuses`` returns prose; ``judge-repairable`` prose until repaired, as
``repairable``; ``judge-filler`` scores (or flags) with "..." for every justification (or
reason). ``fault-*`` aliases fault first, then judge. A premise prompt (``THE FALSE PREMISE``)
gets a yes/no verdict: ``judge-yes`` always flagged, ``judge-no`` never, any other alias flagged when the answer contains "no", "not", "never" or "only" (a crude reader, unlike the
plugin's heuristic, so tests can tell who decided). The rubric family's paper-protocol prompts get plain
text as its released formats say: a rating per line (``Ratings:``), a ``"judgement": "Response 1"`` line.

Generation prompts (they ask for ``"multi_hop_questions"``) get benchmark rows built from the
paper's own sentences: ``gen-mixed`` writes a verbatim quote, a paraphrased one, one with a word
changed and two fabricated ones among verbatim quotes; ``gen-truncated`` first replies with the
rows' JSON cut off halfway (as a model stopped by max_tokens), then whole; any other alias
writes verbatim quotes only (``gen-repeats`` asks each lookup question again as the comprehension question and
states a question as the first false premise). Repair prompts (they hold ``<<<PASSAGES``) are answered from the diagnosis they carry: the
nearest passage, or the quote up to its departure point followed by what the paper says there;
of the fabricated quotes one gets ``null`` and the other a new fabrication. A paper that
contains ``[[provider-rejects-this-paper]]`` gets a 400 error (a provider refusing one paper).

Rubric-family prompts: a research task (``FIELD:`` and ``QUESTION:``, no paper) gets a long-form
answer: ``good`` restates the query with context and dated references, ``sloppy`` gives one vague
sentence and cites a work from after any cutoff. A coverage prompt (``RUBRIC ITEMS:``) gets every item
scored 0-4 by its word overlap with the answer; a pairwise prompt (``<<<RESPONSE_A``) prefers the answer
with more words (``judge-first`` always prefers the first shown: a position-biased judge).

Every request is recorded (``requests``) so tests can count calls.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import random
import re
import sys
import threading
import time
from typing import Optional

FAULTS = ("429", "500", "timeout", "truncated", "malformed", "empty")


def _sentences(paper: str) -> list[str]:
    flat = " ".join(paper.split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat) if len(s.split()) >= 8]


def best_sentence(paper: str, question: str) -> str:
    words = set(re.findall(r"[a-z]{4,}", question.lower()))
    return max(_sentences(paper), key=lambda s: len(words & set(re.findall(r"[a-z]{4,}", s.lower()))))


def _overlap(answer: str, expected: str) -> float:
    words = lambda t: set(re.findall(r"[a-z0-9]{3,}", t.lower()))  # noqa: E731
    return len(words(answer) & words(expected)) / max(1, len(words(expected)))


def premise_reply(model: str, prompt: str) -> str:
    """A premise judge's verdict: {"reason", "flagged"} (see the module's docstring)."""
    marked = re.search(r"<<<ANSWER (\w+)\n(.*)\nANSWER \1>>>", prompt, re.DOTALL)
    answer = marked.group(2) if marked else ""
    if model == "judge-yes" or model == "judge-no":
        flagged = model == "judge-yes"
    else:
        flagged = bool(re.search(r"\b(?:no|not|never|only)\b", answer, re.IGNORECASE))
    reason = "The answer says the premise does not hold." if flagged else "The answer takes the premise as given."
    if model == "judge-filler":
        reason = "..."
    return json.dumps({"reason": reason, "flagged": flagged})


def verdict_reply(model: str, prompt: str, attempt: int) -> str:
    """A judge's verdict: scores from word overlap with the expected answer (``judge-*`` aliases)."""
    expected = prompt.split("EXPECTED ANSWER:", 1)[1].split("<<<ANSWER", 1)[0]
    # The answer sits between markers that carry a per-call nonce: <<<ANSWER n ... ANSWER n>>>.
    marked = re.search(r"<<<ANSWER (\w+)\n(.*)\nANSWER \1>>>", prompt, re.DOTALL)
    answer = marked.group(2) if marked else prompt.rsplit("<<<ANSWER", 1)[1].rsplit("ANSWER>>>", 1)[0]
    if "Step 1. List every factual claim" in prompt:
        sentences = [t for t in re.split(r"(?<=[.!?])\s+", answer.strip()) if t]
        claims = [{"claim": t[:80], "status": "verified" if _overlap(t, expected) > 0.2 else "extra"}
                  for t in sentences[:4]]
        return json.dumps({"claims": claims, "missed_points": [] if _overlap(answer, expected) > 0.3 else ["the main point"]})
    if model == "judge-saturated":
        factual = complete = 5
    elif model == "judge-flaky":
        factual = complete = 3 + attempt % 2
    else:
        score = 1 + round(4 * min(1.0, _overlap(answer, expected) * 1.5))
        factual, complete = score, max(1, score - 1)
    if model == "judge-filler":
        return json.dumps({"factual_accuracy": {"justification": "...", "score": factual},
                           "completeness": {"justification": "...", "score": complete}})
    return json.dumps({"factual_accuracy": {"justification": "Checked the stated figures.", "score": factual},
                       "completeness": {"justification": "Compared the key points.", "score": complete}})


def _content_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{4,}", text.lower())) - {"does", "response", "answer", "that", "with", "from"}


def _between(prompt: str, name: str) -> str:
    marked = re.search(rf"<<<{name} (\w+)\n(.*)\n{name} \1>>>", prompt, re.DOTALL)
    return marked.group(2) if marked else ""


def research_reply(model: str, prompt: str) -> dict:
    """A long-form answer to a research query: ``sloppy`` is vague and cites a work from after any cutoff."""
    query = prompt.rsplit("QUESTION:", 1)[1].strip()
    if model == "sloppy":
        return {"answer": "Researchers have studied this for a long time and views differ [1].",
                "citations": ["[1] Nobody, A. (2099). A review from the future. Journal of Hindsight."],
                "refused": False}
    answer = (f"Work on the question of how {query.rstrip('?').lower()} has grown steadily. Studies report "
              f"consistent findings across settings [1], with methods refined over time and open problems "
              f"noted by later reviews [2].")
    return {"answer": answer, "citations": ["[1] Smith, J. (2001). An early study. Journal of Studies.",
                                            "[2] Jones, K. (2010). A later review. Annual Reviews."],
            "refused": False}


def coverage_reply(model: str, prompt: str, attempt: int = 0) -> str:
    """Every rubric item scored by the share of its content words the answer contains (``judge-flaky``
    adds one to the first item's score on every other call)."""
    block = prompt.split("RUBRIC ITEMS:", 1)[1].split("<<<ANSWER", 1)[0]
    items = re.findall(r"^\d+\. (.+)$", block, re.MULTILINE)
    answer = _content_words(_between(prompt, "ANSWER"))
    scored = []
    for number, item in enumerate(items, 1):
        words = _content_words(item)
        share = len(words & answer) / max(1, len(words))
        scored.append({"item": number, "justification": f"{len(words & answer)} of {len(words)} key words present.",
                       "coverage": min(4, round(4 * share * 1.25))})
    if model == "judge-flaky" and scored and attempt % 2:
        scored[0]["coverage"] = (scored[0]["coverage"] + 1) % 5
    return json.dumps({"items": scored})


def pairwise_reply(model: str, prompt: str) -> str:
    first, second = _between(prompt, "RESPONSE_A"), _between(prompt, "RESPONSE_B")
    if model == "judge-first":
        choice = "A"
    else:
        a, b = len(first.split()), len(second.split())
        choice = "A" if a > b else "B" if b > a else "tie"
    return json.dumps({"justification": "Compared how much each answer says.", "preferred": choice})


# The rubric family's paper protocol (judges/coverage_paper.md, judges/pairwise_paper.md): plain-text replies.
_PAPER_RATINGS = ("Not at all", "Barely", "Moderately", "Mostly", "Completely")


def paper_coverage_reply(prompt: str) -> str:
    """One rating a question, by the share of its content words the response contains."""
    answer_text = prompt.split("\nResponse: ", 1)[1].split("\nQuestions:", 1)[0]
    block = prompt.split("\nQuestions:\n", 1)[1].rsplit("\nRatings:", 1)[0]
    answer = _content_words(answer_text)
    ratings = []
    for item in (line for line in block.splitlines() if line.strip()):
        words = _content_words(item)
        ratings.append(_PAPER_RATINGS[min(4, round(4 * len(words & answer) / max(1, len(words)) * 1.25))])
    return "\n".join(ratings)


def paper_pairwise_reply(prompt: str) -> str:
    """The longer response wins (binary: a tie goes to the first)."""
    first = prompt.split("\nResponse 1: ", 1)[1].split("\nResponse 2: ", 1)[0]
    second = prompt.split("\nResponse 2: ", 1)[1]
    choice = "2" if len(second.split()) > len(first.split()) else "1"
    return f'**output: {{"judgement": "Response {choice}"}}** It says more.'


def good_reply(prompt: str) -> dict:
    paper = prompt.split("<<<PAPER", 1)[1].split("PAPER>>>", 1)[0]
    question = prompt.rsplit("QUESTION:", 1)[1].strip()
    quote = best_sentence(paper, question)
    return {"answer": f"According to the paper: {quote}", "citations": [quote], "refused": False}


# Quotes no paper of the tests contains: the first gets null on repair, the second a new fabrication.
FABRICATED = ("The follow-up survey of 9,999 alumni confirmed that every participant preferred the placebo "
              "condition by a wide margin.",
              "Our secondary analysis across 4,321 households showed that the effect vanished entirely in the "
              "rural subsample.")
REJECTED_PAPER = "[[provider-rejects-this-paper]]"


def _body_sentences(paper: str) -> list[str]:
    """Sentences a model would quote: prose of 12 to 60 words, none from the reference list."""
    body = re.split(r"\n\s*(?:\d+\.?\s*)?References\s*\n", paper)[0]
    return [s for s in _sentences(body) if 12 <= len(s.split()) <= 60 and "http" not in s and "et al" not in s
            and sum(c.isalpha() for c in s) > 0.7 * len(s)]


def _paraphrase(sentence: str) -> str:
    words = sentence.rstrip(".").split()
    kept = [w for i, w in enumerate(words) if i % 5 != 3]  # drop every fifth word: the gist, not the text
    return "In other words, " + " ".join(kept).lower() + "."


def _alter(sentence: str) -> str:
    words = sentence.split()
    position = next((i for i, w in enumerate(words) if i >= len(words) // 2 and w.isalpha() and len(w) > 4),
                    len(words) // 2)
    words[position] = "remarkably"
    return " ".join(words)


def generation_reply(model: str, prompt: str) -> str:
    """Benchmark rows for the paper in a generation prompt, quoting its own sentences."""
    paper = prompt.split("<<<PAPER", 1)[1].split("PAPER>>>", 1)[0]
    pool = _body_sentences(paper)
    step = max(1, len(pool) // 14)
    picked = [pool[(i * step) % len(pool)] for i in range(14)]

    def block(label: str, *quotes: str) -> dict:
        return {"section_label": label, "alternatives": list(quotes)}

    def topic(sentence: str) -> str:
        return " ".join(sentence.split()[:6])

    chunks = []
    for n in range(4):
        first, second = picked[2 * n], picked[2 * n + 1]
        chunks.append({
            "section": f"Part {n + 1}", "page_hint": None, "chunk_description": f"about {topic(first)}",
            "source_text": first,
            "lookup": {"question": f"What does the paper state about {topic(first)}?", "expected_answer": first,
                       "expected_references": [block(f"Part {n + 1}", first)]},
            "comprehension": {"question": f"Why does it matter that {topic(second)}?", "expected_answer": second,
                              "expected_references": [block(f"Part {n + 1}", second)],
                              "judge_rubric": "States the point; explains why it matters."}})
    hops = [{"question": f"How do {topic(picked[8])} and {topic(picked[9 + n])} relate?",
             "expected_answer": f"{picked[8]} {picked[9 + n]}", "required_sections": ["Methods", "Results"],
             "expected_references": [block("Methods", picked[8]), block("Results", picked[9 + n])],
             "reasoning_chain": "The method explains the result.",
             "judge_rubric": "integrates information from every required section"} for n in range(2)]
    adversarial = [{"question": "Why did the authors include a placebo arm?",
                    "false_premise": "The paper describes no placebo arm.",
                    "expected_answer": "The paper does not describe a placebo arm; the premise is false.",
                    "expected_references": [], "judge_rubric": "identifies the false premise"},
                   {"question": f"Why do the authors deny that {topic(picked[12])}?",
                    "false_premise": "The authors state it; they do not deny it.",
                    "expected_answer": f"They do not deny it: {picked[12]}",
                    "expected_references": [block("Results", picked[12])],
                    "judge_rubric": "identifies the false premise"}]
    if model == "gen-repeats":  # each chunk's lookup question asked again as its comprehension question
        for chunk in chunks:
            chunk["comprehension"]["question"] = chunk["lookup"]["question"].upper().rstrip("?") + " ?"
        adversarial[0]["false_premise"] = "Did the authors include a placebo arm?"
    if model == "gen-mixed":
        chunks[0]["lookup"]["expected_references"][0]["alternatives"].append(FABRICATED[0])
        chunks[0]["comprehension"]["expected_references"][0]["alternatives"] = [_paraphrase(picked[1])]
        chunks[1]["lookup"]["expected_references"][0]["alternatives"] = [_alter(picked[2])]
        hops[0]["expected_references"][1]["alternatives"] = [FABRICATED[1]]
    return json.dumps({"domain": "test studies", "chunks": chunks, "multi_hop_questions": hops,
                       "adversarial_questions": adversarial})


def repair_reply(prompt: str) -> str:
    """Repairs that use the diagnosis in the prompt, as a careful model would."""
    listed = json.loads(prompt.split("<<<PASSAGES", 1)[1].split("PASSAGES>>>", 1)[0])
    repairs = []
    for item in listed:
        quote = item["quotation"]
        if "nearest_passage" in item:
            passage = item["nearest_passage"]
        elif "paper_goes_on" in item:
            cut = quote.find(item["quotation_goes_on"][:30])
            passage = quote[: max(cut, 0)] + re.split(r"(?<=[.!?])\s", item["paper_goes_on"])[0]
        elif quote == FABRICATED[0]:
            passage = None
        else:
            passage = "A different claim the paper never makes about 17 unnamed cohorts in three unnamed regions."
        repairs.append({"id": item["id"], "passage": passage})
    return json.dumps({"repairs": repairs})


class _ClientsMayLeave(http.server.ThreadingHTTPServer):
    """A client that closes its connection while the request is read (a timeout fault, litellm's pool closing)
    is no error of the server's: socketserver would print its traceback into the output a test inspects."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class ScriptedLLM:
    def __init__(self, latency_s: float = 0.0, latency_sigma: float = 0.0, seed: int = 0,
                 fault_rate: float = 0.0) -> None:
        self.latency_s = latency_s
        # The share of prompts (chosen by the prompt's hash, so the same ones in every run) whose first
        # attempt, under any alias, gets a 500 or a 429 in turn: faults spread across one model.
        self.fault_rate = fault_rate
        self.latency_sigma = latency_sigma
        self.random = random.Random(seed)
        self.requests: list[dict] = []
        self.attempts: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        self.timeout_sleep_s = 3.0
        self.in_flight = self.max_in_flight = 0
        # What GET /props and GET /v1/models report (None: 404), as llama.cpp's and vLLM's servers do.
        self.props: Optional[dict] = None
        self.models: Optional[dict] = None
        self.gets: list[str] = []
        self.drip_gets = False  # GETs answered one byte every 0.1 s, headers included (for ~20 s, then cut)
        # The tokens every completion reports (None: the reply's own small counts), to make a priced call cost
        # what a real one of that size would.
        self.usage: Optional[tuple[int, int]] = None
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes on a kept-alive connection: with Nagle's algorithm the
            # body waits for the client's delayed ACK, 40 ms a call (a real server sends them at once).
            disable_nagle_algorithm = True

            def do_GET(self):
                server.gets.append(self.path)
                if server.drip_gets:  # a slow-drip server: each byte arrives well inside any per-read timeout
                    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
                    try:
                        for byte in (raw + b" " * 999)[:200]:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.1)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                found = {"/props": server.props, "/v1/models": server.models}.get(self.path)
                data = json.dumps(found if found is not None else {"error": "not found"}).encode()
                self.send_response(200 if found is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                model = body.get("model", "")
                if model == "trickle":  # headers, then one byte every 0.2 s: only a wall-clock deadline ends it
                    server.requests.append(body)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    try:
                        for _ in range(200):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                if model == "retry-after" and server.calls("retry-after") == 0:
                    body["_received"] = time.monotonic()
                    server.requests.append(body)
                    data = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
                    self.send_response(429)
                    self.send_header("Retry-After", "2")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if model == "echo-key":  # a provider that repeats the key it was sent in its error
                    server.requests.append(body)
                    data = json.dumps({"error": {"message": f"Incorrect API key provided: "
                                                            f"{self.headers.get('Authorization', '')}",
                                                 "type": "auth_error"}}).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status, payload, delay = server.respond(body)
                body["_status"] = status
                if server.usage is not None and isinstance(payload, dict) and "usage" in payload:
                    prompt, completion_tokens = server.usage
                    payload["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                                        "total_tokens": prompt + completion_tokens}
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if delay:
                        time.sleep(delay)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout fault)

            def log_message(self, *args):
                pass

        self.httpd = _ClientsMayLeave(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # serve_forever looks for shutdown() every poll_interval: its default (0.5 s) was half a second of
        # waiting at the end of every test with a server.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def __enter__(self) -> "ScriptedLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls(self, model: Optional[str] = None) -> int:
        return sum(1 for r in self.requests if model is None or r["model"] == model)

    def questions(self, model: Optional[str] = None) -> list[str]:
        return [prompt_of(r).rsplit("QUESTION:", 1)[-1].strip()
                for r in self.requests if model is None or r["model"] == model]

    def _delay(self) -> float:
        if not self.latency_s:
            return 0.0
        return self.latency_s * self.random.lognormvariate(0, self.latency_sigma) if self.latency_sigma else self.latency_s

    def respond(self, body: dict) -> tuple[int, object, float]:
        model = body.get("model", "")
        prompt = prompt_of(body)
        with self.lock:
            body["_received"] = time.monotonic()
            self.requests.append(body)
            key = (model, prompt)
            attempt = self.attempts.get(key, 0)
            self.attempts[key] = attempt + 1
            delay = self._delay()
        if model == "down":
            return 500, {"error": {"message": "upstream exploded", "type": "server_error"}}, delay
        if model == "auth":
            return 401, {"error": {"message": "invalid api key", "type": "auth_error"}}, 0.0
        judging = "<<<ANSWER" in prompt
        if model in ("repairable", "judge-repairable") and not is_repair(body):
            return 200, completion(model, "The paper says the results improved, as shown in the tables."), delay
        if model == "truncating" and (body.get("max_tokens") or 0) < 1000:
            cut = json.dumps(good_reply(prompt))[:40]
            return 200, completion(model, cut, finish_reason="length"), delay
        if model == "garbage" or model == "judge-refuses":
            return 200, completion(model, "I cannot grade this answer."), delay
        if model == "judge-broken":
            return 200, completion(model, '{"factual_accuracy": {"justification": "ok", "score": 7}}'), delay
        if self.fault_rate and attempt == 0 and faulty(prompt, self.fault_rate):
            if int(hashlib.sha256(prompt.encode()).hexdigest()[8:16], 16) % 2:
                return 429, {"error": {"message": "rate limit reached", "type": "rate_limit"}}, 0.0
            return 500, {"error": {"message": "internal error", "type": "server_error"}}, 0.0
        if model.startswith("fault-") and attempt == 0:
            fault = model[len("fault-"):]
            if fault == "429":
                return 429, {"error": {"message": "rate limit reached", "type": "rate_limit"}}, 0.0
            if fault == "500":
                return 500, {"error": {"message": "internal error", "type": "server_error"}}, 0.0
            if fault == "timeout":
                return 200, completion(model, "{}"), self.timeout_sleep_s
            if fault == "truncated":
                return 200, completion(model, '{"factual_accuracy": {"justif'), 0.0
            if fault == "malformed":
                return 200, b'{"id": "x", "choices": [', 0.0
            if fault == "empty":
                return 200, {"id": "x", "object": "chat.completion", "created": 1, "model": model, "choices": [],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}}, 0.0
        if "RUBRIC ITEMS:" in prompt:
            return 200, completion(model, coverage_reply(model, prompt, len(self.requests))), delay
        if prompt.rstrip().endswith("Ratings:") and "\nQuestions:\n" in prompt:
            return 200, completion(model, paper_coverage_reply(prompt)), delay
        if "\nResponse 1: " in prompt and "\nResponse 2: " in prompt:
            return 200, completion(model, paper_pairwise_reply(prompt)), delay
        if "<<<RESPONSE_A" in prompt:
            return 200, completion(model, pairwise_reply(model, prompt)), delay
        if judging and "THE FALSE PREMISE" in prompt:
            return 200, completion(model, premise_reply(model, prompt)), delay
        if judging:
            return 200, completion(model, verdict_reply(model, prompt, len(self.requests))), delay
        if REJECTED_PAPER in prompt:
            return 400, {"error": {"message": "this document violates the usage policy", "type": "invalid_request"}}, 0.0
        if '"multi_hop_questions"' in prompt:
            reply = generation_reply(model, prompt)
            if model == "gen-truncated" and attempt == 0:  # the reply cut off mid-string, as at max_tokens
                reply = reply[: len(reply) // 2]
            return 200, completion(model, reply), delay
        if "<<<PASSAGES" in prompt:
            return 200, completion(model, repair_reply(prompt)), delay
        if "<<<PAPER" not in prompt and "FIELD:" in prompt:
            return 200, completion(model, json.dumps(research_reply(model, prompt))), delay
        reply = good_reply(prompt)
        # "wavering" answers like "good" on one call and like "sloppy" on the next: a model whose
        # answers to the same question differ (--researchqa-repeats).
        if model == "drifting":  # its words change from one call of a prompt to the next (--researchqa-refresh)
            reply["answer"] += f" (take {attempt + 1})"
        if model == "sloppy" or (model == "wavering" and len(self.requests) % 2 == 0):
            reply["citations"] = [re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), c, count=1)
                                  for c in reply["citations"]]
        return 200, completion(model, json.dumps(reply)), delay


def faulty(prompt: str, rate: float) -> bool:
    """Whether a prompt is among the ``rate`` share that fault first (by its hash: stable across runs)."""
    return int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) < rate * 16**8


def prompt_of(body: dict) -> str:
    """The request's prompt: its first user message (a repair call adds turns after it)."""
    return next(m["content"] for m in body["messages"] if m.get("role") == "user")


def is_repair(body: dict) -> bool:
    """A repair call: the model's own reply as an assistant turn, then a user turn saying what was wrong."""
    messages = body["messages"]
    return len(messages) >= 3 and messages[-2].get("role") == "assistant" and messages[-1].get("role") == "user"


def completion(model: str, content: str, finish_reason: str = "stop") -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": max(1, len(content) // 4), "completion_tokens": 20, "total_tokens": 40},
    }
