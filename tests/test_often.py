"""The rows users meet most: a full context window made room in, a rate limit waited out as the
server asks, a flood of output stopped with its head and tail kept, a one-shot run kept to go on
with, white space that is no answer, a refused save tried again until it lands. Each test failed
on the build before these rows (git show ad180f7:bantam.py, run through BANTAM_CMD)."""
import json
import os
import subprocess
import sys

from fake_server import chunk, sse
from helpers import BANTAM, FIXTURES, BantamCase, python_only
from test_refusals import Window, body, printing
from test_servers import served

MARKER = '[... left out: run the command again with head, tail or grep ...]'


def fixture(name):
    with open(os.path.join(FIXTURES, name), 'rb') as f:
        return f.read()


class FullWindow(BantamCase):
    """A window too small for the conversation: the oldest output goes, the last one left is cut
    to its head and tail, and a prompt that got no reply is taken back (the real refusals of
    llama.cpp, OpenAI and DeepSeek, served by a window that counts request bytes)."""

    def test_the_only_output_keeps_its_head_and_its_tail(self):
        # seq 1 200000: 1.3 MB, one output; the window holds 20,000 bytes. Its last number, the
        # one the model needs, stays (a placeholder for the whole lost it: live, the model
        # guessed at commands).
        self.config(color='never', timeout=10, shell_timeout=20, max_tool_res=100000)
        window = Window(20000, body('llamacpp-error-400-exceed-context'),
                        [{'calls': [('shell_exec', {'command': 'seq 1 200000'})]},
                         {'text': 'the last number is 200000'}])
        self.server.default = window
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-600:])
        [output] = [m['content'] for m in window.accepted[-1]['messages'] if m['role'] == 'tool']
        self.assertTrue(output.startswith('1\n2\n3\n'), output[:40])
        self.assertTrue(output.endswith('199999\n200000\n\n\nexit: 0'), output[-40:])
        self.assertIn(MARKER, output)
        self.assertIn('the context window is full', proc.stderr)

    def test_the_newest_output_stays_whole_while_an_older_one_can_go(self):
        for name in ('llamacpp-error-400-exceed-context', 'deepseek-error-400-context-length'):
            self.server.requests.clear()
            window = Window(8000, body(name), [printing(1), printing(2), printing(3),
                                               {'text': 'all done'}])
            self.server.default = window
            proc = self.run_bantam()
            self.assertEqual(proc.returncode, 0, (name, proc.stderr[-600:]))
            outputs = [m['content'] for m in window.accepted[-1]['messages']
                       if m['role'] == 'tool']
            self.assertEqual(outputs[-1][:8], 'output 3', name)
            self.assertNotIn(MARKER, outputs[-1], name)  # whole
            self.assertIn(MARKER, outputs[0], name)

    def test_a_prompt_too_long_for_the_window_says_what_to_do_and_is_taken_back(self):
        self.server.default = Window(6000, body('llamacpp-error-400-exceed-context'), [])
        proc = self.run_repl('x' * 7000, 'a short one')
        lines = proc.stderr.splitlines()
        self.assertIn('HTTP 400: request (6009 tokens) exceeds the available context size (4096 '
                      'tokens), try increasing it (the context window is full: /clear, or a '
                      'bigger window)', lines)
        self.assertIn('[no answer: the prompt is taken back; Up brings it back]', lines)
        self.assertEqual(self.sent()[1:], [{'role': 'user', 'content': 'a short one'}])
        self.assertIn('OK', proc.stdout)


class RateLimits(BantamCase):
    """A Retry-After of whole seconds up to a minute is the wait; an error object inside a
    stream that the server would retry is a broken stream."""

    def test_a_retry_after_of_three_seconds_is_waited(self):
        self.script({'status': 429, 'json': {'error': {'message': 'Rate limit reached'}},
                     'headers': {'Retry-After': '3'}}, {'text': 'later'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        first, second = [r['time'] for r in self.server.requests]
        self.assertGreaterEqual(second - first, 3)
        self.assertIn('HTTP 429: Rate limit reached; retrying in 3 s', proc.stderr)

    def test_a_retry_after_of_more_than_a_minute_ends_the_turn_at_once(self):
        self.script({'status': 503, 'json': {'error': {'message': 'overloaded'}},
                     'headers': {'Retry-After': '61'}}, {'text': 'never asked'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.splitlines()[-1],
                         'bantam: HTTP 503: overloaded (Retry-After: 61 s)')
        self.assertEqual(len(self.server.requests), 1)

    def test_an_error_chunk_with_code_502_is_retried(self):
        error = {'code': 502, 'message': 'Provider returned error'}
        self.script({'raw': sse(chunk({'content': 'half'})) + sse({'error': error})},
                    {'text': 'the whole answer'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('server error: Provider returned error; retrying in 1 s', proc.stderr)
        self.assertIn('the whole answer', proc.stdout)

    def test_an_error_chunk_the_server_would_not_retry_ends_the_turn(self):
        self.script({'raw': fixture('openrouter-midstream-error.sse')}, {'text': 'never'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(self.server.requests), 1)
        self.assertEqual(proc.stderr.splitlines()[-1],
                         'bantam: server error: Token limit reached')


class Flood(BantamCase):
    """A command's output is bounded on disk (the command stopped at 256 MB) and in the
    conversation (its head and its tail, errors being at the end)."""

    def test_the_tail_of_a_long_output_is_kept(self):
        self.config(color='never', timeout=10, max_tool_res=4000)
        self.script({'calls': [('shell_exec', {'command': 'seq 1 100000; echo the error >&2'})]},
                    {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        output = self.sent()[-1]['content']
        self.assertTrue(output.startswith('1\n2\n3\n'))
        self.assertTrue(output.endswith('99999\n100000\nthe error\n\n\nexit: 0'), output[-60:])
        self.assertIn(MARKER, output)
        self.assertLessEqual(len(output), 4000)

    def test_a_flood_is_stopped_with_its_group(self):
        # Three gigabytes, a megabyte at a time, counted beside: stopped near 256 MB.
        count = os.path.join(self.dir, 'count')
        command = ('for i in $(seq 1 3000); do head -c 1000000 /dev/zero; echo $i >> %s; done; '
                   'echo finished' % count)
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'stopped'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-500:])
        result = self.sent()[-1]['content']
        self.assertTrue(result.endswith('exit: killed: past shell_timeout, or over 256 MB of '
                                        'output'), result[-100:])
        self.assertNotIn('finished', result)
        with open(count) as f:
            self.assertLess(int(f.read().split()[-1]), 400)  # megabytes: well under a gigabyte
        self.assertIn(MARKER, result)


class OneShotKept(BantamCase):
    """A one-shot run is saved under an id of its own and says it; /load continues it."""

    def test_a_one_shot_run_then_load_and_a_second_prompt(self):
        self.script({'text': 'first answer'}, {'text': 'second answer'})
        proc = self.run_bantam(prompt='the first task')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        [line] = [x for x in proc.stderr.splitlines() if x.startswith('saved session ')]
        sid = line.split()[-1]
        self.assertFalse(os.path.exists(os.path.join(self.sessions(), 'autosave.json')))
        self.run_repl('/load ' + sid, 'go on')
        self.assertEqual([m['content'] for m in self.sent()[1:]],
                         ['the first task', 'first answer', 'go on'])

    def test_a_run_whose_save_is_refused_exits_as_before(self):
        self.block_sessions()
        self.script({'text': 'answered'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, 'answered\n')
        self.assertTrue(proc.stderr.splitlines()[-1].startswith('not saved: '), proc.stderr)


class WhiteSpace(BantamCase):
    """White space is no answer; a reply cut at max_tokens says so."""

    def test_blank_lines_are_no_answer(self):
        self.script({'text': '\n\n'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 2, proc.stderr)

    def test_a_blank_reply_after_a_tool_is_asked_once_more(self):
        self.script({'calls': [('shell_exec', {'command': 'echo ran'})]}, {'text': '\n'},
                    {'text': 'it ran'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.server.requests), 3)
        self.assertEqual(self.sent()[-1]['role'], 'user')

    def test_a_blank_summary_is_not_taken(self):
        self.script({'text': 'the answer'}, {'text': ' \n\n'}, {'text': 'A real summary.'})
        proc = self.run_repl('the task', '/compact')
        self.assertIn('the reply was empty or ended early; retrying in 1 s', proc.stderr)
        self.assertEqual(self.autosaved()[1]['content'],
                         'Summary of our work so far:\nA real summary.')

    def test_a_reply_cut_at_max_tokens_says_so(self):
        self.script({'text': 'The answer is', 'finish': 'length'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('the reply was cut at max_tokens', proc.stderr)


class SaveTriedAgain(BantamCase):
    """A save the disk refused is tried again after every line and on leaving, until it lands;
    /save refused says the same line."""

    def test_leaving_once_the_disk_is_free_saves_the_conversation(self):
        self.block_sessions()
        self.script({'text': 'one'})
        session = self.start_repl()
        self.ask(session, 'first', 'not saved: ')
        os.remove(self.sessions())  # the disk is free again
        self.ask(session, '/quit', '')
        self.assertEqual(session.wait(), 0)
        self.assertEqual([m['content'] for m in self.autosaved()[1:]], ['first', 'one'])

    def test_a_refused_save_command_says_not_saved(self):
        self.block_sessions()
        proc = self.run_repl('/save')
        self.assertIn('not saved: ', proc.stderr)
        self.assertNotIn('FileExistsError', proc.stderr)


@python_only
class RunWithDashC(BantamCase):
    """python3 -c "$(cat bantam.py)" has no __file__: it is beside nothing, as from stdin."""

    def test_the_script_given_with_c_runs_on_the_users_settings(self):
        self.script({'text': 'ran from -c'})
        with open(BANTAM) as f:
            source = f.read()
        proc = subprocess.run([sys.executable, '-c', source, self.prompt_file()], cwd=self.cwd,
                              env=self.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr[-500:])
        self.assertEqual(proc.stdout, 'ran from -c\n')
        self.assertEqual(json.loads(self.server.requests[0]['raw'])['model'], 'fake-model')


class CameIn(BantamCase):
    """Rows that waited for lines and are built now (the full window's take-back, Retry-After,
    an error chunk retried, an error's words in any envelope)."""

    def test_a_prompt_refused_for_good_is_not_glued_to_the_next_ones(self):
        window = {'status': 400, 'json': {'error': {
            'message': "This model's maximum context length is 8192 tokens.",
            'type': 'invalid_request_error', 'code': 'context_length_exceeded'}}}
        self.script(window, {'text': 'one'}, {'text': 'two'})
        self.run_repl('x' * 5000, 'short one', 'short two')
        self.assertEqual([m['content'] for m in self.sent() if m['role'] == 'user'],
                         ['short one', 'short two'])

    def test_an_unanswered_prompt_is_taken_back(self):
        self.script({'status': 401, 'json': {'error': {'message': 'who are you'}}},
                    {'text': 'now I see'})
        self.run_repl('first words', 'second words')
        self.assertEqual(self.sent()[1:], [{'role': 'user', 'content': 'second words'}])

    def test_a_retry_after_of_an_hour_is_not_slept(self):
        self.script({'status': 429, 'json': {'error': {'message': 'daily limit'}},
                     'headers': {'Retry-After': '3600'}}, {'text': 'never asked'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn('3600', proc.stderr.splitlines()[-1])
        self.assertEqual(len(self.server.requests), 1)

    def test_an_error_shows_its_words_whatever_the_envelope(self):
        self.script(served('mistral-400-user-after-tool.json', 400))
        proc = self.run_bantam()
        self.assertIn("HTTP 400: Unexpected role 'user' after role 'tool'", proc.stderr)

    def test_an_error_the_server_failed_with_inside_a_stream_is_retried(self):
        with open(os.path.join(FIXTURES, 'openrouter-midstream-error-docs.sse'), 'rb') as f:
            self.script({'raw': f.read()}, {'text': 'the retried answer'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('Provider disconnected unexpectedly', proc.stderr)
        self.assertIn('the retried answer', proc.stdout)
