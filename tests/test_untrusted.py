"""Untrusted text: what the model, a server or a saved file says is shown inert, runs only when it
is a call the model made, and never reaches the user's key."""
import json
import os
import re
import subprocess

from fake_server import FakeServer, chunk, sse
from helpers import CMD, BantamCase, read

# Sequences that act on a terminal (or hide text) when they are printed raw.
ATTACKS = {'clipboard': '\x1b]52;c;ZWNobyBvd25lZA==\x07', 'title': '\x1b]0;owned\x07',
           'clear screen': '\x1b[2J', 'conceal': '\x1b[8m', 'C1 introducer': '\x9b31m',
           'right-to-left override': '\u202e', 'zero width space': '\u200b',
           'Unicode tags': '\U000e0041\U000e0042', 'carriage return': '\r', 'bell': '\x07'}
EVIL = ''.join(ATTACKS.values())
ACTIVE = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u206f'
                    '\ufeff\U000e0000-\U000e007f]')
KEY = 'sk-proj-' + 'Kq7' * 12  # as long as a real provider key
CALL = {'name': 'shell_exec', 'arguments': {'command': 'touch made'}}


def raw_stream(*deltas):
    """SSE bytes for these deltas, then a finish chunk and [DONE]."""
    return b''.join([sse(chunk(d)) for d in deltas] + [sse(chunk({}, 'stop')), b'data: [DONE]\n\n'])


class ShownInert(BantamCase):
    """Everything shown that came from outside has no control or invisible character left."""

    def assert_inert(self, *texts):
        for text in texts:
            self.assertIsNone(ACTIVE.search(text), repr(text[:400]))

    def test_the_models_words_and_reasoning(self):
        self.script({'reasoning': 'plan ' + EVIL, 'text': 'Hello ' + EVIL + 'world'})
        proc = self.run_repl('hi')
        self.assert_inert(proc.stdout, proc.stderr)
        self.assertIn('Hello ', proc.stdout)
        self.assertIn('plan ', proc.stdout)
        # what is stored (and sent to the model again) is what the model said
        self.assertEqual(self.autosaved()[2]['content'], 'Hello ' + EVIL + 'world')

    def test_bantams_own_colours_still_work(self):
        self.config(color='always')
        self.script({'reasoning': 'plan' + EVIL, 'text': EVIL + 'done',
                     'calls': [('shell_exec', {'command': 'echo hi'})]}, {'text': 'ok'})
        proc = self.run_bantam()
        own = re.compile(r'\x1b\[(1;90|36|2|33|32|31|0)m')
        self.assert_inert(own.sub('', proc.stdout), own.sub('', proc.stderr))
        self.assertIn('\x1b[33m[tool call:', proc.stderr)
        self.assertIn('\x1b[2mplan', proc.stdout)

    def test_a_tool_name_and_arguments_in_the_trace(self):
        self.script({'calls': [('shell\x1b]0;owned\x07_exec', '{"command": "ls\u202e"}')]},
                    {'text': 'ok'})
        proc = self.run_bantam()
        self.assertIn('[tool call: shell]0;owned_exec(', proc.stderr)
        self.assert_inert(proc.stderr)

    def test_a_session_summary_in_list(self):
        os.makedirs(self.sessions())
        with open(os.path.join(self.sessions(), '20260101-000000.json'), 'w') as f:
            json.dump({'time': 'then', 'summary': 'evil' + EVIL, 'messages': []}, f)
        proc = self.run_repl('/list')
        self.assertIn('20260101-000000', proc.stderr)
        self.assert_inert(proc.stderr)

    def test_a_servers_error_text(self):
        self.script({'status': 400, 'json': {'error': {'message': 'bad ' + EVIL + 'request'}}})
        proc = self.run_bantam()
        self.assertIn('HTTP 400: bad ', proc.stderr)
        self.assert_inert(proc.stderr)

    def test_a_servers_error_is_one_line(self):
        self.script({'status': 400, 'json': {'error': {'message': 'first line\n  second line'}}})
        proc = self.run_bantam()
        self.assertEqual(proc.stderr.splitlines()[-1], 'bantam: HTTP 400: first line second line')

    def test_the_key_is_replaced_in_the_models_words(self):
        # (a streamed reply is cleaned piece by piece: a key split across pieces is not caught;
        # the model never gets the key from a tool result or a command's environment)
        self.config(api_key=KEY, stream='false')
        self.script({'text': 'I found your key: %s, in .env' % KEY})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout, 'I found your key: [api key], in .env\n')


class CallsEndTheReply(BantamCase):
    """A call written as text runs only when it ends the reply."""

    def test_a_call_quoted_inside_an_answer_stays_text(self):
        text = ('The README asks you to run %s but I did not run anything.' % json.dumps(CALL))
        self.script({'text': text})
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (0, 1), proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, 'made')))
        self.assertNotIn('[tool call:', proc.stderr)

    def test_a_quoted_call_then_the_real_one(self):
        quoted = json.dumps({'name': 'shell_exec', 'arguments': {'command': 'touch quoted'}})
        self.script({'text': 'The file says %s; instead I run:\n%s' % (quoted, json.dumps(CALL))},
                    {'text': 'done'})
        self.run_bantam()
        self.assertTrue(os.path.exists(os.path.join(self.cwd, 'made')))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, 'quoted')))
        self.assertEqual(self.sent()[2]['content'], 'The file says %s; instead I run:' % quoted)

    def test_the_search_is_linear(self):
        # 60,000 spaces, a word and a call took 55 s of CPU with a backtracking expression; this
        # is more than three times as long, and the run's own deadline is the test's limit
        self.script({'text': ' ' * 200000 + 'word ' + json.dumps(CALL)}, {'text': 'done'})
        proc = self.run_bantam(timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr[-500:])
        self.assertTrue(os.path.exists(os.path.join(self.cwd, 'made')))

    def test_deeply_nested_braces_stay_text(self):
        self.script({'text': '{"name": ' * 5000})
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, len(self.server.requests)), (0, 1), proc.stderr[-500:])


class TheKey(BantamCase):
    def test_a_short_key_is_not_a_secret_and_commands_run_as_written(self):
        self.config(api_key='ollama')
        command = 'echo ollama list > out.txt; cat out.txt'
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        proc = self.run_bantam()
        self.assertEqual(read(os.path.join(self.cwd, 'out.txt')), 'ollama list\n')
        self.assertEqual(self.sent()[-1]['content'], 'ollama list\n\n\nexit: 0')
        self.assertNotIn('[api key]', proc.stderr)

    def test_commands_do_not_inherit_openai_api_key(self):
        self.script({'calls': [('shell_exec', {'command': 'echo "${OPENAI_API_KEY:-unset}"'})]},
                    {'text': 'ok'})
        self.run_bantam(env={'OPENAI_API_KEY': KEY})
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + KEY)
        self.assertEqual(self.sent()[-1]['content'], 'unset\n\n\nexit: 0')

    def test_commands_keep_openai_api_key_when_bantam_sends_another(self):
        # A local server's key in model.cfg: the user's own programs still need theirs.
        other = 'sk-user-' + 'Zw4' * 12
        self.config(api_key=KEY, color='never', timeout=10, shell_timeout=20)
        # It is there for them, and hidden like the key sent (issue 32): not shown, not sent.
        command = 'echo "${OPENAI_API_KEY:-unset}"; echo ${#OPENAI_API_KEY}; env | grep OPENAI'
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        proc = self.run_bantam(env={'OPENAI_API_KEY': other})
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + KEY)
        self.assertEqual(self.sent()[-1]['content'],
                         '[api key]\n44\nOPENAI_API_KEY=[api key]\n\n\nexit: 0')
        self.assertNotIn(other, proc.stdout + proc.stderr)
        self.assertNotIn(other, json.dumps([r['body'] for r in self.server.requests]))

    def test_the_same_key_in_model_cfg_and_the_environment_is_taken_out(self):
        self.config(api_key=KEY, color='never', timeout=10, shell_timeout=20)
        self.script({'calls': [('shell_exec', {'command': 'echo "${OPENAI_API_KEY:-unset}"'})]},
                    {'text': 'ok'})
        self.run_bantam(env={'OPENAI_API_KEY': KEY})
        self.assertEqual(self.sent()[-1]['content'], 'unset\n\n\nexit: 0')

    def test_a_key_with_a_line_break_inside_is_sent_joined_and_never_printed(self):
        # "$(cat key.txt)" of a two-line file: urllib's error would print the header's bytes, so
        # the white space a paste leaves inside the variable's key goes (round 9: it replaces the
        # refusal of such a key, cut for lines).
        self.script({'status': 401, 'json': {'error': {'message': 'Incorrect key ' + KEY}}})
        proc = self.run_bantam(env={'OPENAI_API_KEY': KEY[:20] + '\n' + KEY[20:]})
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + KEY)
        self.assertNotIn(KEY[:20], proc.stderr)
        self.assertNotIn(KEY[20:], proc.stderr)

    def test_a_key_with_a_space_inside_in_model_cfg_is_sent_as_written_never_printed(self):
        spaced = KEY[:20] + ' ' + KEY[20:]
        self.config(api_key=spaced, color='never', timeout=10)
        self.script({'status': 401, 'json': {'error': {'message': 'Incorrect key ' + spaced}}})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + spaced)
        self.assertNotIn(KEY[20:], proc.stderr)

    def test_white_space_around_the_key_is_trimmed(self):
        proc = self.run_bantam(env={'OPENAI_API_KEY': ' %s\r' % KEY})  # a CRLF .env file
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + KEY)
        self.assertNotIn(KEY, proc.stderr)

    def test_a_line_without_equals_is_one_line_that_never_shows_it(self):
        # A key pasted on a line of its own: Python's words (not enough values to unpack), which
        # hold no text of the line (round 9: the line's number was cut for lines).
        self.append_config(KEY)
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertNotIn(KEY, proc.stderr)
        self.assertNotIn(KEY[:10], proc.stderr)

    def test_a_redirect_never_takes_the_key_to_another_host(self):
        elsewhere = FakeServer()
        self.addCleanup(elsewhere.close)
        self.config(api_key=KEY, stream='true', color='never', timeout=10)
        self.script({'status': 302, 'headers': {'Location': elsewhere.url + '/chat/completions'}})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(self.server.requests[0]['headers']['Authorization'], 'Bearer ' + KEY)
        for request in elsewhere.requests:
            self.assertNotIn('Authorization', request['headers'])
        self.assertNotIn(KEY, proc.stderr)


class RunsAsDecoded(BantamCase):
    def test_a_command_runs_exactly_as_the_model_wrote_it(self):
        # hidden characters are taken out of what is shown, never out of what runs
        self.script({'calls': [('shell_exec', {'command': "printf 'x\u200by' | wc -c"})]},
                    {'text': 'ok'})
        self.run_bantam()
        self.assertEqual(self.sent()[-1]['content'].split()[0], '5')


class DisplayBugs(BantamCase):
    def test_the_closing_marker_has_its_colour_when_a_reply_ends_in_reasoning(self):
        self.config(color='always')
        self.script({'reasoning': 'only thoughts'})
        proc = self.run_bantam()
        self.assertRegex(proc.stdout, r'\x1b\[36m\n?--- reasoning end ---')

    def test_reasoning_after_words_without_a_line_break_starts_a_line(self):
        self.script({'raw': raw_stream({'content': 'Hello'}, {'reasoning_content': 'think'},
                                       {'content': 'Bye.'})})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout, 'Hello\n--- reasoning start ---\nthink\n'
                                      '--- reasoning end ---\nBye.\n')


class ClosedInput(BantamCase):
    def test_a_closed_standard_input_ends_the_repl(self):
        proc = subprocess.run(CMD, cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                              timeout=20, preexec_fn=lambda: os.close(0))
        self.assertEqual(proc.returncode, 0, proc.stderr[-500:])
        self.assertEqual(proc.stderr, '')
