"""Every OpenAI-compatible server: replays of real wire captures, the HTTP error policy,
token usage and environment overrides."""
import glob
import json
import os
import re

from helpers import FIXTURES, BantamCase

CAPTURES = sorted(p for p in glob.glob(os.path.join(FIXTURES, '*'))
                  if os.path.isfile(p) and not p.endswith('.expected.json'))
# Left out for the line budget (README "Known limits"): reasoning sent only in reasoning_details or
# in Mistral's thinking parts is not shown, and old llama.cpp's "error:" lines are skipped like any
# other field (that stream then holds only [DONE]: an empty answer, which is not stored).
UNSHOWN_REASONING = ('mistral-magistral-content-array', 'snowflake-cortex-claude-reasoning-details')
SKIPPED_ERROR_LINES = ('llamacpp-legacy-error-field',)
# Left out for lines (README "Known limits"; tests/test_waiting.py holds the row): a reply whose
# words come only in "refusal" is no answer here; a port that shows it passes too.
UNSHOWN_REFUSALS = ('openai-refusal',)


def sidecar(path):
    with open(os.path.splitext(path)[0] + '.expected.json') as f:
        return json.load(f)


class Replay(BantamCase):
    """Each capture is served byte for byte (and once more in 1-byte writes) through the REPL
    on a pipe; the printed words and the saved conversation must match its sidecar."""

    def serve(self, path, chunk=None):
        meta = sidecar(path)
        with open(path, 'rb') as f:
            raw = f.read()
        serve = meta.get('serve') or {}
        # The body goes byte for byte; Azure's "retry-after: 33" is left out here (and waited for
        # in ErrorPolicy.test_azure_retry_after_33_is_waited).
        headers = {k: v for k, v in (serve.get('headers') or {}).items()
                   if k not in ('content-type', 'retry-after')}
        self.script({'raw': raw, 'code': serve.get('status', 200), 'chunk': chunk,
                     'type': (serve.get('headers') or {}).get('content-type', 'text/event-stream'),
                     'headers': headers})
        return meta

    def check(self, path, chunk=None):
        meta = self.serve(path, chunk)
        name = os.path.splitext(os.path.basename(path))[0]
        expected = meta['expected']
        proc = self.run_repl('hello')
        self.assertNotIn('Traceback', proc.stderr)
        messages = self.autosaved()
        out = proc.stdout
        if name in SKIPPED_ERROR_LINES or name in UNSHOWN_REFUSALS:
            self.assertEqual(len(self.server.requests), 1)
            if name in UNSHOWN_REFUSALS and out != '> > ':  # a port that shows the refusal
                self.assertIn("I'm sorry", out)
                return
            # No answer: nothing is shown, and no empty message is kept (the prompt may stay).
            self.assertEqual(out, '> > ')
            self.assertEqual([m['role'] for m in messages[1:]], ['user'][:len(messages[1:])])
            return
        if 'error' in expected:  # an HTTP error body
            message = expected['error'].get('message') or json.dumps(expected['error'])
            self.assertIn(message[:60], proc.stderr)
            self.assertIn('HTTP %d' % meta['serve']['status'], proc.stderr)
            return
        if expected.get('stream_errors'):  # an error inside a 200 stream
            error = expected['stream_errors'][0]['error']
            self.assertIn(error['message'], proc.stderr)
            # One the server would retry (its code a 5xx, 429 or server_error) may be retried:
            # that row waits (tests/test_waiting.py), and a port that builds it passes here too,
            # its answer the fake server's "OK" (issue 56 row 1). Any other ends the turn.
            if not re.fullmatch('429|5..|server_error', str(error.get('code'))):
                self.assertEqual(len(self.server.requests), 1)
            self.assertEqual([m['content'] for m in messages if m['role'] == 'assistant'],
                             ['OK'] * (len(self.server.requests) > 1))
            return
        if not expected.get('choices'):  # not a chat stream at all: broken, retried
            self.assertIn('ended early', proc.stderr)
            self.assertIn('OK', out)
            return
        choice = expected['choices'][0]
        content = (choice.get('content') or '').replace('<<absent>>', '')
        content += choice.get('refusal') or ''
        if 'run it as a tool call' in meta.get('agent_should', ''):  # a call written as text
            return self.check_call_in_text(proc, messages, content)
        reasoning = '' if name in UNSHOWN_REASONING else choice.get('reasoning') or ''
        # Inline <think>/<thought> markup stays content (splitting it out is optional). MiniMax
        # sends its reasoning twice, in "reasoning" and in content, interleaved chunk by chunk.
        words = ''
        if reasoning:
            # each marker on a line of its own: a line break first only where one is missing
            words = '--- reasoning start ---\n%s%s--- reasoning end ---\n' % (
                reasoning, '' if reasoning.endswith('\n') else '\n')
        words += content + ('\n' if content[-1:] not in ('', '\n') else '')
        interleaved = reasoning and '<think>' in content
        self.assertTrue(interleaved or out.startswith('> ' + words), out[:3000])
        reply = messages[2]
        self.assertEqual(reply['role'], 'assistant')
        self.assertEqual(reply['content'], content)
        calls = reply.get('tool_calls') or []
        self.assertEqual([(c['function']['name'], c['function']['arguments']) for c in calls],
                         [(c['name'], c['arguments']) for c in choice.get('tool_calls') or []])
        for call, want in zip(calls, choice.get('tool_calls') or []):
            self.assertEqual(call['id'], want['id'] or call['id'])
            self.assertTrue(call['id'])
        tool_answers = [m for m in messages if m['role'] == 'tool']
        self.assertEqual([m['tool_call_id'] for m in tool_answers], [c['id'] for c in calls])
        self.assert_valid_conversation(messages)
        self.assertNotIn('token limit', proc.stderr)  # that notice was cut for lines


    def check_call_in_text(self, proc, messages, text):
        """The text is shown as it came; the conversation holds the call as a real tool call
        (the text before it as content) and its tool result."""
        self.assertIn(text, proc.stdout)
        start = min(text.index(o) for o in ('{"name"', '{\n  "name"') if o in text)
        call = json.JSONDecoder().raw_decode(text, start)[0]
        reply, result = messages[2], messages[3]
        self.assertEqual(reply['content'], text[:start].strip('`json\n{'))
        [stored] = reply['tool_calls']
        self.assertEqual((stored['function']['name'], json.loads(stored['function']['arguments'])),
                         (call['name'], call['arguments']))
        self.assertEqual((result['role'], result['tool_call_id']), ('tool', stored['id']))
        self.assertIn('[tool call: %s(' % call['name'], proc.stderr)
        self.assert_valid_conversation(messages)


def replay_test(path, chunk):
    return lambda self: self.check(path, chunk)


for _path in CAPTURES:
    _name = re.sub(r'\W', '_', os.path.splitext(os.path.basename(_path))[0])
    setattr(Replay, 'test_' + _name, replay_test(_path, None))
    if _path.endswith('.sse') and os.path.getsize(_path) < 20000:
        setattr(Replay, 'test_' + _name + '_in_1_byte_writes', replay_test(_path, 1))


class ErrorPolicy(BantamCase):
    def error(self, status, message='nope', code=None, headers=None):
        error = {'message': message, 'type': 'test'}
        if code:
            error['code'] = code
        return {'status': status, 'json': {'error': error}, 'headers': headers or {}}

    def test_retryable_statuses(self):
        for status in (408, 409, 425, 429, 503):
            self.server.requests.clear()
            self.script(self.error(status), {'text': 'fine'})
            proc = self.run_bantam()
            self.assertEqual((proc.returncode, len(self.server.requests)), (0, 2), status)

    def test_other_4xx_fail_at_once_with_the_servers_message(self):
        for status in (400, 401, 403, 404, 422):
            self.server.requests.clear()
            self.script(self.error(status, 'server says %d' % status))
            proc = self.run_bantam()
            self.assertEqual(proc.returncode, 1)
            self.assertEqual(len(self.server.requests), 1)
            self.assertIn('HTTP %d: server says %d' % (status, status), proc.stderr)

    def test_insufficient_quota_fails_at_once(self):
        self.script(self.error(429, 'You exceeded your current quota', 'insufficient_quota'))
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (1, 1))
        self.assertIn('exceeded your current quota', proc.stderr)

    def test_azure_429_is_retried(self):
        # Azure's body ("Please retry after 33 seconds") with a Retry-After of 1 in place of its
        # 33: the schedule's first wait and the server's are the same second, so a port that waits
        # out a Retry-After passes too (that row: tests/test_waiting.py; issue 56 row 1).
        with open(os.path.join(FIXTURES, 'azure-openai-error-429-retry-after.json'), 'rb') as f:
            self.script({'raw': f.read(), 'code': 429, 'type': 'application/json',
                         'headers': {'retry-after': '1'}}, {'text': 'later'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('Please retry after 33 seconds', proc.stderr)
        self.assertIn('retrying in 1 s', proc.stderr)
        self.assertEqual(len(self.server.requests), 2)

    def test_a_context_length_error_is_the_servers_own_words_on_one_line(self):
        # With no output to leave out, the server's words and what to do, on one line.
        for name in ('openai-error-400-context-length-exceeded',
                     'deepseek-error-400-context-length', 'llamacpp-error-400-exceed-context'):
            self.server.requests.clear()
            with open(os.path.join(FIXTURES, name + '.json'), 'rb') as f:
                self.script({'raw': f.read(), 'code': 400, 'type': 'application/json'})
            proc = self.run_bantam()
            self.assertEqual((proc.returncode, len(self.server.requests)), (1, 1), name)
            message = sidecar(os.path.join(FIXTURES, name + '.json'))['expected']['error']
            last = proc.stderr.splitlines()[-1]
            self.assertEqual(last, 'bantam: HTTP 400: ' + message['message'] + ' (the context '
                             'window is full: /clear, or a bigger window)')

    def test_a_broken_stream_is_retried_and_only_the_full_reply_is_kept(self):
        self.script({'text': 'a partial answer that breaks', 'cut': 3},
                    {'text': 'the whole answer'})
        proc = self.run_repl('question')
        self.assertIn('ended early', proc.stderr)
        self.assertIn('retrying', proc.stderr)
        self.assertIn('the whole answer', proc.stdout)
        messages = self.read_session('autosave')['messages']
        self.assertEqual([m.get('content') for m in messages[2:]], ['the whole answer'])

    def test_an_error_inside_a_stream_keeps_the_conversation_valid(self):
        with open(os.path.join(FIXTURES, 'openrouter-midstream-error.sse'), 'rb') as f:
            self.script({'raw': f.read()})
        self.script({'text': 'the next answer'})
        proc = self.run_repl('hi', 'again')
        self.assertIn('the next answer', proc.stdout, proc.stderr)
        # No reply at all: the prompt is taken back.
        self.assertEqual([m['role'] for m in self.sent()], ['system', 'user'])
        self.assert_valid_conversation(self.autosaved())

    def test_the_api_key_never_appears_even_when_echoed(self):
        key = 'sk-very-secret-0123456789'
        self.config(api_key=key, color='never')
        self.script(self.error(401, 'Incorrect API key provided: %s.' % key),)
        proc = self.run_bantam()
        self.assertNotIn(key, proc.stdout + proc.stderr)
        self.assertIn('Incorrect API key', proc.stderr)
        self.server.requests.clear()
        self.script({'calls': [('shell_exec', {'command': 'echo $OPENAI_API_KEY'})]},
                    {'status': 500, 'json': {'error': {'message': 'echo ' + key}}},
                    {'text': 'done'})
        proc = self.run_bantam(env={'OPENAI_API_KEY': key})
        self.assertNotIn(key, proc.stdout + proc.stderr)
        self.assertNotIn(key, json.dumps(self.sent()))

    def test_generated_ids_for_calls_without_one(self):
        self.script({'calls': [('shell_exec', {'command': 'echo a'}, ''),
                               ('shell_exec', {'command': 'echo b'}, '')]}, {'text': 'ok'})
        self.run_bantam()
        messages = self.sent()
        ids = [c['id'] for c in messages[2]['tool_calls']]
        self.assertTrue(all(ids) and len(set(ids)) == 2, ids)
        self.assert_valid_conversation(messages)


class NoUsageRequest(BantamCase):
    def test_no_stream_options_are_sent_and_usage_chunks_are_harmless(self):
        self.script({'text': 'hi', 'usage': {'prompt_tokens': 10, 'completion_tokens': 2}})
        proc = self.run_bantam()
        self.assertNotIn('stream_options', self.server.requests[0]['body'])
        self.assertEqual((proc.returncode, proc.stdout), (0, 'hi\n'))


class Overrides(BantamCase):
    def test_api_key_precedence(self):
        self.config(api_key='sk-cfg')
        self.run_bantam(env={'OPENAI_API_KEY': 'sk-openai', 'BANTAM_API_KEY': 'sk-ignored'})
        self.config()
        self.run_bantam(env={'OPENAI_API_KEY': 'sk-openai'})
        self.assertEqual([r['headers']['Authorization'] for r in self.server.requests],
                         ['Bearer sk-cfg', 'Bearer sk-openai'])

    def test_bantam_variables_no_longer_override_model_cfg(self):
        # Left out for the line budget (README, "Known limits"): model.cfg is the one place.
        self.config(model='from-cfg')
        proc = self.run_bantam(env={'BANTAM_MODEL': 'from-env', 'BANTAM_TIMEOUT': 'soon'})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.server.requests[0]['body']['model'], 'from-cfg')

    def test_trailing_slash_and_reasoning_effort(self):
        self.append_config('endpoint=%s/' % self.server.url, 'reasoning_effort=low')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(self.server.requests[0]['path'], '/v1/chat/completions')
        self.assertEqual(self.server.requests[0]['body']['reasoning_effort'], 'low')
