"""What the server sent goes back (issue 31): thinking models want their reasoning and their
signatures back on every later request, and a strict server that refuses a field of its own
reply gets it taken out once. Each fake server below keeps its provider's documented rule and
answers a request that breaks it with the provider's real error body (tests/fixtures/sent-back)."""
import json
import os

from helpers import FIXTURES, BantamCase

SENT_BACK = os.path.join(FIXTURES, 'sent-back')


def body(name):
    with open(os.path.join(SENT_BACK, name + '.json'), 'rb') as f:
        return f.read()


def served(message, stream, finish):
    """An assistant message with any fields, as the server sends it: SSE (text fields in two
    pieces, each call's extra fields with its first fragment, its arguments in two) or JSON."""
    if not stream:
        choice = {'index': 0, 'message': message, 'finish_reason': finish}
        return {'raw': json.dumps({'choices': [choice]}).encode(), 'type': 'application/json'}
    deltas = [{'role': 'assistant'}]
    for key, value in message.items():
        if key in ('role', 'tool_calls'):
            continue
        half = len(value) // 2 if isinstance(value, str) else 0
        halves = [value[:half], value[half:]] if half else [value]
        deltas += [{key: half} for half in halves]
    for i, call in enumerate(message.get('tool_calls') or []):
        args = call['function']['arguments']
        first = dict(call, index=i, function={'name': call['function']['name'], 'arguments': ''})
        deltas.append({'tool_calls': [first]})
        for part in (args[:len(args) // 2], args[len(args) // 2:]):
            deltas.append({'tool_calls': [{'index': i, 'function': {'arguments': part}}]})
    events = [{'choices': [{'index': 0, 'delta': d, 'finish_reason': None}]} for d in deltas]
    events.append({'choices': [{'index': 0, 'delta': {}, 'finish_reason': finish}]})
    raw = b''.join(b'data: ' + json.dumps(e).encode() + b'\n\n' for e in events)
    return {'raw': raw + b'data: [DONE]\n\n', 'type': 'text/event-stream'}


def call(n, call_id='', **extra):
    return dict({'id': call_id, 'type': 'function', 'function': {
        'name': 'shell_exec', 'arguments': json.dumps({'command': 'echo step %d' % n})}}, **extra)


class Rule:
    """A fake server: it checks each request by its rule, refusing one that breaks it, and
    otherwise plays the next of its replies (assistant messages)."""

    def __init__(self, refusal, replies, stream):
        self.refusal, self.replies, self.stream = refusal, list(replies), stream
        self.refused, self.accepted, self.sent = 0, [], []

    def broken(self, request):  # overridden: is the rule broken?
        return False

    def __call__(self, request):
        if self.broken(request):
            self.refused += 1
            return {'raw': self.refusal, 'code': 400, 'type': 'application/json'}
        self.accepted.append(request)
        message = self.replies.pop(0)
        self.sent.append(message)
        finish = 'tool_calls' if message.get('tool_calls') else 'stop'
        return served(message, self.stream, finish)

    def assistants(self, request):
        return [m for m in request['messages'] if m['role'] == 'assistant']


class Thinking(Rule):
    """DeepSeek V4 and Kimi: each assistant message that made tool calls comes back with the
    reasoning_content the server sent with it."""

    def broken(self, request):
        for sent, back in zip(self.sent, self.assistants(request)):
            lost = back.get('reasoning_content') != sent['reasoning_content']
            if back.get('tool_calls') and lost:
                return True
        return False


class Signatures(Rule):
    """Gemini 3: each call the server signed comes back with its extra_content."""

    def broken(self, request):
        for sent, back in zip(self.sent, self.assistants(request)):
            for want, got in zip(sent.get('tool_calls') or [], back.get('tool_calls') or []):
                if 'extra_content' in want and got.get('extra_content') != want['extra_content']:
                    return True
        return False


class Strict(Rule):
    """Groq: a field it does not know, its own reasoning included, is refused."""

    def broken(self, request):
        return any('reasoning' in m for m in request['messages'])


THOUGHTS = ['I should list the files first.', 'Now the second step.', 'Both steps ran.']


def thinking_replies():
    return [{'role': 'assistant', 'content': '', 'reasoning_content': THOUGHTS[0],
             'tool_calls': [call(1, 'call_ds_1')]},
            {'role': 'assistant', 'content': '', 'reasoning_content': THOUGHTS[1],
             'tool_calls': [call(2, 'call_ds_2')]},
            {'role': 'assistant', 'content': 'All done.', 'reasoning_content': THOUGHTS[2]}]


def signed(text):
    return {'google': {'thought_signature': text}}


class SentBack(BantamCase):
    def loop(self, server, stream, repl=False):
        """Run a loop of two tool calls and an answer against server; return the process."""
        self.config(stream='true' if stream else 'false', color='never', timeout=10)
        self.server.default = server
        proc = self.run_repl('do the two steps') if repl else self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertIn('All done.', proc.stdout)
        self.assertEqual(len(server.accepted), 3, proc.stderr[-800:])
        return proc

    def test_deepseek_and_kimi_get_their_reasoning_back(self):
        for refusal in ('deepseek-400-missing-reasoning-content',
                        'kimi-400-reasoning-content-missing'):
            for stream in (True, False):
                self.server.requests.clear()
                server = Thinking(body(refusal), thinking_replies(), stream)
                proc = self.loop(server, stream)
                self.assertEqual(server.refused, 0, (refusal, stream, proc.stderr[-800:]))
                last = server.accepted[-1]['messages']
                kept = [m.get('reasoning_content') for m in last if m['role'] == 'assistant']
                self.assertEqual(kept, THOUGHTS[:2])
                for thought in THOUGHTS:  # shown once, between the markers
                    self.assertEqual(proc.stdout.count(thought), 1, (refusal, stream))
                self.assertEqual(proc.stdout.count('--- reasoning start ---'), 3)

    def test_the_autosave_holds_the_reasoning(self):
        server = Thinking(body('deepseek-400-missing-reasoning-content'), thinking_replies(), True)
        self.loop(server, True, repl=True)
        saved = [m.get('reasoning_content') for m in self.autosaved() if m['role'] == 'assistant']
        self.assertEqual(saved, THOUGHTS)

    def test_gemini_gets_its_signatures_back_streamed(self):
        replies = [{'role': 'assistant', 'content': '',
                    'tool_calls': [call(1, 'gem-1', extra_content=signed('c2lnLW9uZQ=='))]},
                   {'role': 'assistant', 'content': '',
                    'tool_calls': [call(2, 'gem-2', extra_content=signed('c2lnLXR3bw=='))]},
                   {'role': 'assistant', 'content': 'All done.'}]
        server = Signatures(body('gemini-400-missing-thought-signature'), replies, True)
        self.loop(server, True, repl=True)
        self.assertEqual(server.refused, 0)
        calls = [c for m in server.accepted[-1]['messages'] for c in m.get('tool_calls') or []]
        self.assertEqual([c['extra_content'] for c in calls],
                         [signed('c2lnLW9uZQ=='), signed('c2lnLXR3bw==')])
        saved = [c for m in self.autosaved() for c in m.get('tool_calls') or []]
        self.assertEqual(saved[0]['extra_content'], signed('c2lnLW9uZQ=='))

    def test_gemini_not_streamed_with_empty_ids_and_two_calls_signed_once(self):
        replies = [{'role': 'assistant', 'content': '',
                    'tool_calls': [call(1, extra_content=signed('Zmlyc3Q=')), call(2)]},
                   {'role': 'assistant', 'content': '',
                    'tool_calls': [call(3, extra_content=signed('dGhpcmQ='))]},
                   {'role': 'assistant', 'content': 'All done.'}]
        server = Signatures(body('gemini-400-missing-thought-signature'), replies, False)
        self.loop(server, False)
        self.assertEqual(server.refused, 0)
        messages = server.accepted[-1]['messages']
        calls = [c for m in messages for c in m.get('tool_calls') or []]
        self.assertEqual([c.get('extra_content') for c in calls],
                         [signed('Zmlyc3Q='), None, signed('dGhpcmQ=')])
        self.assertTrue(all(c['id'] for c in calls))  # ids of Bantam's own for the empty ones
        self.assertEqual(len({c['id'] for c in calls}), 3)
        answered = [m['tool_call_id'] for m in messages if m['role'] == 'tool']
        self.assertEqual(answered, [c['id'] for c in calls])

    def test_groq_refuses_its_own_reasoning_once(self):
        for stream in (True, False):
            self.server.requests.clear()
            replies = [{'role': 'assistant', 'content': '', 'reasoning': THOUGHTS[0],
                        'tool_calls': [call(1, 'call_g1')]},
                       {'role': 'assistant', 'content': '', 'reasoning': THOUGHTS[1],
                        'tool_calls': [call(2, 'call_g2')]},
                       {'role': 'assistant', 'content': 'All done.', 'reasoning': THOUGHTS[2]}]
            server = Strict(body('groq-400-reasoning-unsupported'), replies, stream)
            proc = self.loop(server, stream)
            self.assertEqual(server.refused, 1, proc.stderr[-800:])  # one per field, per run
            notices = [line for line in proc.stderr.splitlines() if 'refused' in line]
            self.assertEqual(len(notices), 1)
            self.assertTrue(notices[0].startswith('the server refused reasoning (HTTP 400: '))
            self.assertIn("property 'reasoning' is unsupported", notices[0])
            for thought in THOUGHTS:
                self.assertEqual(proc.stdout.count(thought), 1)

    def test_a_field_named_in_a_refusal_but_not_sent_is_left_alone(self):
        # The DeepSeek body names `reasoning_content`, which a server that never sent one
        # does not get: the error ends the turn as any other, after one request.
        self.config(color='never', timeout=10)
        self.script({'raw': body('deepseek-400-missing-reasoning-content'), 'code': 400,
                     'type': 'application/json'})
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (1, 1))
        self.assertIn('Missing `reasoning_content` field', proc.stderr)
