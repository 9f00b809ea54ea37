"""Refusals Bantam can fix: a field the server names is left out and the request sent again at
once; a conversation that no longer fits the context window has its oldest tool outputs over 500
characters left out, one at a time, the last one left cut to its head and tail, until it fits.
The bodies are real ones."""
import json
import os
import re

from helpers import FIXTURES, BantamCase

REFUSED = os.path.join(FIXTURES, 'refused')
LEFT_OUT = '\n\n[... left out: run the command again with head, tail or grep ...]\n\n'


def body(name):
    """The bytes of an error body: tests/fixtures/refused/<name>.json, else tests/fixtures/."""
    path = os.path.join(REFUSED, name + '.json')
    if not os.path.exists(path):
        path = os.path.join(FIXTURES, name + '.json')
    with open(path, 'rb') as f:
        return f.read()


def refusal(name, status=400):
    return {'raw': body(name), 'code': status, 'type': 'application/json'}


def without(raw, field):
    """The request body's bytes with one field (and its comma) taken out."""
    value = json.dumps(json.loads(raw)[field]).encode()
    pair = b'"%s": %s' % (field.encode(), value)
    return raw.replace(b', ' + pair, b'').replace(pair + b', ', b'')


class RefusedFields(BantamCase):
    def assert_left_out(self, proc, field, first, second):
        """The second request is the first without field, byte for byte; a notice says so."""
        raws = [r['raw'] for r in self.server.requests]
        self.assertIn(field, json.loads(raws[first]))
        self.assertNotIn(field, json.loads(raws[second]))
        self.assertEqual(raws[second], without(raws[first], field))
        notices = [line for line in proc.stderr.splitlines() if 'refused' in line]
        self.assertEqual(len(notices), 1, proc.stderr)
        self.assertIn(field, notices[0])
        self.assertNotIn('retrying', proc.stderr)  # at once, not one of the retries

    def test_openai_max_tokens_is_left_out_for_the_rest_of_the_run(self):
        self.config(max_tokens=1024, color='never', timeout=10, shell_timeout=20)
        self.script(refusal('openai-400-max-tokens'),
                    {'calls': [('shell_exec', {'command': 'echo tool round'})]}, {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.server.requests), 3)
        self.assert_left_out(proc, 'max_tokens', 0, 1)
        self.assertNotIn('max_tokens', self.server.requests[2]['body'])  # the tool round too
        self.assertIn('temperature', self.server.requests[2]['body'])

    def test_openai_temperature_other_than_1(self):
        self.script(refusal('openai-400-temperature'), {'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_left_out(proc, 'temperature', 0, 1)

    def test_anthropic_temperature_deprecated(self):
        self.script(refusal('anthropic-400-temperature-deprecated'), {'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_left_out(proc, 'temperature', 0, 1)

    def test_mistral_422_names_the_field_only_in_loc(self):
        self.append_config('reasoning_effort=high')
        self.script(refusal('mistral-422-extra-forbidden', 422), {'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_left_out(proc, 'reasoning_effort', 0, 1)

    def test_gemini_error_inside_a_json_array(self):
        self.append_config('reasoning_effort=minimal')
        self.script(refusal('gemini-400-reasoning-effort'), {'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_left_out(proc, 'reasoning_effort', 0, 1)

    def test_two_fields_refused_one_after_the_other(self):
        self.config(max_tokens=1024, color='never', timeout=10)
        self.script(refusal('openai-400-max-tokens'), refusal('openai-400-temperature'),
                    {'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.server.requests), 3)
        last = self.server.requests[2]['body']
        self.assertNotIn('max_tokens', last)
        self.assertNotIn('temperature', last)
        self.assertEqual(len([line for line in proc.stderr.splitlines() if 'refused' in line]), 2)

    def test_a_field_that_was_not_sent_is_not_fixed(self):
        self.script(refusal('openai-400-max-tokens'))  # max_tokens is not set here
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(self.server.requests), 1)
        self.assertIn("HTTP 400: Unsupported parameter: 'max_tokens'", proc.stderr)

    def test_a_server_that_refuses_everything_ends_after_a_bounded_number_of_requests(self):
        self.config(max_tokens=1024, color='never', timeout=10)
        self.append_config('reasoning_effort=low')
        words = "'temperature', 'max_tokens' and 'reasoning_effort': all bad"
        self.server.default = lambda request: {'status': 400, 'json': {'error': {'message': words}}}
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(self.server.requests), 4)  # the first, then one per field
        self.assertEqual(proc.stderr.strip().splitlines()[-1], 'bantam: HTTP 400: ' + words)
        # Each notice shows the server's own words, on one line.
        self.assertIn('the server refused temperature (HTTP 400: %s): sending again without it'
                      % words, proc.stderr)

    def test_a_401_fails_at_once(self):
        self.script(refusal('openai-error-401-invalid-api-key', 401))
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (1, 1))

    def test_child_agents_and_summaries_leave_it_out_too(self):
        self.script(refusal('openai-400-temperature'),
                    {'calls': [('run_subagent', {'prompt': 'help'})]}, {'text': 'child answer'},
                    {'text': 'parent answer'}, {'text': 'A summary.'})
        proc = self.run_repl('do it', '/compact')
        self.assertEqual(len(self.server.requests), 5, proc.stderr)
        for request in self.server.requests[1:]:
            self.assertNotIn('temperature', request['body'])
        self.assertEqual(self.server.requests[2]['body']['messages'][1]['content'], 'help')


class Window:
    """A fake server whose context window holds request bodies of at most `limit` bytes: a
    larger one gets the refusal body, and accepted ones take the next reply."""

    def __init__(self, limit, refusal_body, replies):
        self.limit, self.refusal, self.replies, self.accepted = limit, refusal_body, replies, []

    def __call__(self, request):
        if len(json.dumps(request)) > self.limit:
            return {'raw': self.refusal, 'code': 400, 'type': 'application/json'}
        self.accepted.append(request)
        return self.replies.pop(0) if self.replies else {'text': 'OK'}


def printing(n, size=3000):
    """A call whose command prints `size` bytes, starting with its number n."""
    return {'calls': [('shell_exec', {'command': 'echo output %d; head -c %d /dev/zero | tr '
                                                 '"\\0" %s' % (n, size, 'abc'[n % 3])})]}


class FullContext(BantamCase):
    CONTEXT_ERRORS = ('openai-error-400-context-length-exceeded',
                      'llamacpp-error-400-exceed-context', 'deepseek-error-400-context-length',
                      'vllm-400-context-length')

    def window(self, limit, name, replies):
        self.server.default = Window(limit, body(name), replies)
        return self.server.default

    def test_a_tool_loop_that_outgrows_the_window_finishes(self):
        for name in self.CONTEXT_ERRORS:
            self.server.requests.clear()
            window = self.window(8000, name, [printing(1), printing(2), printing(3),
                                              {'text': 'all done'}])
            proc = self.run_bantam()
            self.assertEqual(proc.returncode, 0, (name, proc.stderr[-500:]))
            self.assertIn('all done', proc.stdout)
            self.assertEqual(len(window.accepted), 4, name)
            for request in window.accepted:
                self.assert_valid_conversation(request['messages'])
            messages = window.accepted[-1]['messages']
            outputs = [m['content'] for m in messages if m['role'] == 'tool']
            self.assertEqual(len(outputs), 3)
            self.assertTrue(outputs[-1].startswith('output 3\n'), name)  # the latest, whole
            self.assertTrue(outputs[-1].endswith('\n\nexit: 0'), name)
            left_out = [o for o in outputs if o == LEFT_OUT]
            self.assertTrue(left_out and outputs[0] in left_out, name)
            self.assertEqual([m['content'] for m in messages if m['role'] == 'user'], ['hello'])
            notices = [line for line in proc.stderr.splitlines() if 'context window' in line]
            self.assertEqual(len(notices), len(left_out), name)
            self.assertEqual(set(notices), {'the context window is full: sending again with '
                                            'less tool output'})

    def test_nothing_is_left_out_before_the_server_refuses(self):
        window = self.window(10 ** 6, 'llamacpp-error-400-exceed-context',
                             [printing(1), printing(2), {'text': 'done'}])
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        outputs = [m['content'] for m in window.accepted[-1]['messages'] if m['role'] == 'tool']
        self.assertFalse([o for o in outputs if LEFT_OUT in o])
        self.assertNotIn('context window', proc.stderr)

    def test_the_repl_autosaves_a_valid_conversation(self):
        self.window(8000, 'openai-error-400-context-length-exceeded',
                    [printing(1), printing(2), printing(3), {'text': 'all done'}])
        proc = self.run_repl('go')
        self.assertIn('all done', proc.stdout, proc.stderr)
        saved = self.autosaved()
        self.assert_valid_conversation(saved)
        self.assertEqual(len([m for m in saved if m['role'] == 'tool']), 3)
        self.assertEqual(saved[3]['content'], LEFT_OUT)

    def test_a_prompt_that_alone_overflows_is_one_error(self):
        self.window(4000, 'llamacpp-error-400-exceed-context', [])
        proc = self.run_bantam(prompt='x' * 5000)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(self.server.requests), 1)
        self.assertEqual(proc.stderr.strip().splitlines()[-1],
                         'bantam: HTTP 400: request (6009 tokens) exceeds the available context '
                         'size (4096 tokens), try increasing it (the context window is full: '
                         '/clear, or a bigger window)')

    def test_when_every_output_is_left_out_the_error_ends_the_turn(self):
        # The outputs fit; then a prompt that alone does not: the older output goes, the last
        # one is halved while over 500 characters, then one line says what to do.
        window = self.window(10 ** 6, 'llamacpp-error-400-exceed-context',
                             [printing(1), printing(2), {'text': 'first turn'}])
        proc = self.run_repl('first')
        self.assertIn('first turn', proc.stdout)
        self.assertEqual(len(self.server.requests), 3)
        window.limit = 9500
        proc = self.run_repl('/load autosave', 'z' * 9000)
        # Refused; the first output left out; the second (3,019 characters) cut to its head
        # and tail three times (about 1,580, 860, 500 characters): refused for good.
        self.assertEqual(len(self.server.requests), 3 + 5)
        lines = proc.stderr.splitlines()
        self.assertIn('exceeds the available context size', lines[-2])
        self.assertTrue(lines[-2].endswith('(the context window is full: /clear, or a bigger '
                                           'window)'), lines[-2])
        self.assertEqual(lines[-1], '[no answer: the prompt is taken back; Up brings it back]')
        self.assertEqual(len([line for line in lines if 'context window is full:' in line]), 5)

    def test_compact_works_on_a_conversation_that_no_longer_fits(self):
        window = self.window(10 ** 6, 'openai-error-400-context-length-exceeded',
                             [printing(1), printing(2), {'text': 'worked'}])
        self.run_repl('work')
        window.limit, window.replies = 5000, [{'text': 'We printed two outputs.'}]
        proc = self.run_repl('/load autosave', '/compact')
        self.assertIn('We printed two outputs.', proc.stdout, proc.stderr)
        self.assertEqual([m['role'] for m in self.autosaved()], ['system', 'user'])
        self.assertIn('We printed two outputs.', self.autosaved()[1]['content'])
        self.assertTrue(re.search('context window is full', proc.stderr))


def sent_back(name):
    with open(os.path.join(FIXTURES, 'sent-back', name + '.json'), 'rb') as f:
        return {'raw': f.read(), 'code': 400, 'type': 'application/json'}


class NoWorkLost(BantamCase):
    """A fix never loses work (issue 32): only a body about the context window is a full window,
    a summary's fix stays in its copy, small outputs stay, fixes are a loop, and a field the
    body only mentions stays."""

    def outputs(self, messages):
        return [m['content'] for m in messages if m['role'] == 'tool']

    def test_any_other_too_long_is_not_a_full_window(self):
        self.config(color='never', timeout=10)
        self.script(printing(1), sent_back('openai-400-string-too-long'))
        proc = self.run_repl('go')
        self.assertEqual(len(self.server.requests), 2, proc.stderr)
        self.assertIn('string too long', proc.stderr)
        self.assertNotIn('context window', proc.stderr)
        [output] = self.outputs(self.autosaved())
        self.assertTrue(output.startswith('output 1\n'))

    def test_a_summary_never_changes_the_conversation(self):
        self.config(color='never', timeout=10)
        full = refusal('openai-error-400-context-length-exceeded')
        self.script(printing(1), {'text': 'ok'}, full,
                    {'status': 401, 'json': {'error': {'message': 'and now no more'}}})
        proc = self.run_repl('go', '/compact')
        self.assertIn('and now no more', proc.stderr)
        [cut] = self.outputs(self.server.requests[3]['body']['messages'])
        self.assertTrue(cut.startswith('output 1\n') and LEFT_OUT in cut)
        [output] = self.outputs(self.autosaved())  # the copy had its output left out, not this
        self.assertTrue(output.startswith('output 1\n'))
        self.assertEqual(len(self.autosaved()), 5)

    def test_outputs_of_500_characters_or_fewer_stay(self):
        self.config(color='never', timeout=10)
        quiet = [{'calls': [('shell_exec', {'command': ': %d' % i})]} for i in range(4)]
        self.script(*quiet[:3], printing(4), quiet[3],
                    refusal('openai-error-400-context-length-exceeded'), {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        outputs = self.outputs(self.sent())
        # The large one, the only one over 500 characters, is cut to its head and tail; the
        # small ones stay.
        self.assertTrue(outputs[3].startswith('output 4\n') and LEFT_OUT in outputs[3])
        self.assertEqual([o for i, o in enumerate(outputs) if i != 3],
                         ['(no output)\n\nexit: 0'] * 4)

    def test_a_long_run_of_fixes_is_a_loop(self):
        # Three hundred outputs and a server that keeps refusing: a fix each, the last one
        # halved, then one line (with each fix a call of its own, this ended in RecursionError
        # once). (Only the outputs: the calls they answer would make each request twice as
        # large.)
        messages = [{'role': 'system', 'content': 'sys'}, {'role': 'user', 'content': 'do'}]
        messages += [{'role': 'tool', 'tool_call_id': 'c', 'content': 'o' * 600}] * 300
        messages.append({'role': 'assistant', 'content': 'done'})
        os.makedirs(self.sessions())
        with open(os.path.join(self.sessions(), 'big.json'), 'w') as f:
            json.dump({'time': 'then', 'summary': 'big', 'messages': messages}, f)
        self.config(color='never', timeout=10)
        full, seen = refusal('openai-error-400-context-length-exceeded'), []

        def refuse(request):  # counted, not kept: a thousand large bodies would fill memory
            outputs = self.outputs(request['messages'])
            seen.append(len(outputs) - outputs.count(LEFT_OUT))
            self.server.requests.clear()
            return full
        self.server.default = refuse
        proc = self.run_repl('/load big', 'go on', timeout=110)
        self.assertFalse('RecursionError' in proc.stderr, proc.stderr[-300:])
        # One output fewer each time; the last one, halved, is sent once more.
        self.assertEqual(seen, list(range(300, 0, -1)) + [1])
        lines = proc.stderr.splitlines()
        self.assertTrue(lines[-2].startswith('HTTP 400: '), lines[-3:])
        self.assertEqual(lines[-1], '[no answer: the prompt is taken back; Up brings it back]')

    def test_a_field_only_mentioned_stays(self):
        self.config(color='never', timeout=10)
        self.script(sent_back('openai-400-safety-refusal'))
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (1, 1))
        self.assertNotIn('refused temperature', proc.stderr)
        self.assertIn("'what temperature should I set the oven to' was flagged", proc.stderr)
