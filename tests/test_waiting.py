"""The rows that wait for lines (README "Known limits"), one test each. Each asserts the right
behaviour and is marked @waiting: an expected failure on this repository's bantam.py (so the run
turns red the day its row is built, and the mark comes off), and under BANTAM_CMD a pass for a
port that does better, a skip for one that does not. Speed rows (linear joins, the cost issue)
are benchmarks: tests/bench.py."""
import json
import os
import signal
import socket
import subprocess
import threading

from fake_server import chunk, sse
from helpers import CMD, BantamCase, waiting, wait_until
from test_merge import call_delta, stream
from test_refusals import Window, body
from test_servers import Rule, served


def slow_server(then, every, send):
    """A socket server: its first answer sends event-stream headers and then `send` every `every`
    seconds, never a line of data; later connections get `then` (raw bytes). Returns
    (url, stop)."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    done = threading.Event()

    def serve():
        first = True
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            if not first:
                conn.sendall(then)
                conn.close()
                continue
            first = False
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n')
            while not done.wait(every):
                try:
                    conn.sendall(send)
                except OSError:
                    break
            conn.close()
    threading.Thread(target=serve, daemon=True).start()

    def stop():
        done.set()
        listener.close()
    return 'http://127.0.0.1:%d/v1' % listener.getsockname()[1], stop


def trickling_server(then):
    """One byte every half second, never ending a line."""
    return slow_server(then, 0.5, b'x')


def keep_alive_server(then):
    """Keep-alive comments only, one every 0.2 s (as OpenRouter sends while a request waits)."""
    return slow_server(then, 0.2, b': OPENROUTER PROCESSING\n\n')


class TurnEnd(BantamCase):
    """How a turn ends: a stalled stream."""

    @waiting
    def test_a_stalled_stream_is_retried(self):
        answer = b'data: {"choices":[{"index":0,"delta":{"content":"unstuck"},' \
                 b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        url, stop = trickling_server(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n'
                                     b'Connection: close\r\n\r\n' + answer)
        self.addCleanup(stop)
        self.config(timeout=1, color='never')
        self.append_config('endpoint=' + url)
        proc = self.start_bantam()
        self.addCleanup(proc.communicate)  # (after the kill below: reaped, its pipes closed)
        self.addCleanup(proc.kill)
        try:
            out, err = proc.communicate(timeout=3)  # (when built: 1 s, a retry, the answer)
        except subprocess.TimeoutExpired:
            self.fail('a reply that never completes a line holds Bantam')
        self.assertIn('unstuck', out, err)


class Merge(BantamCase):
    """What goes back: streamed pieces merged as the model wrote them."""

    def sent_back(self, *deltas):
        self.script(stream(*deltas, call_delta(), finish='tool_calls'), {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        return self.sent()[2]

    @waiting
    def test_interleaved_pieces_of_two_calls_make_two_calls(self):
        def head(i, command):
            return {'tool_calls': [{'index': i, 'id': 'call_%d' % i, 'type': 'function',
                                    'function': {'name': 'shell_exec', 'arguments': ''}}]}

        def piece(i, text):
            return {'tool_calls': [{'index': i, 'function': {'arguments': text}}]}
        self.script(stream(head(0, ''), head(1, ''), piece(0, '{"command": '), piece(1, '{"comm'),
                           piece(0, '"echo zero"}'), piece(1, 'and": "echo one"}'),
                           finish='tool_calls'), {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual([c['function']['arguments'] for c in self.sent()[2]['tool_calls']],
                         ['{"command": "echo zero"}', '{"command": "echo one"}'])

    @waiting
    def test_entries_that_are_not_objects_are_kept_as_they_came(self):
        for entries in (['a', 'b'], [1, 2], [[1], [2]]):
            self.server.requests.clear()
            self.assertEqual(self.sent_back({'reasoning_details': entries})['reasoning_details'],
                             entries)

    @waiting
    def test_a_value_of_another_type_replaces_the_one_kept(self):
        for first, then in (('text first', {'a': 'object'}), ({'a': 'object'}, 'text then')):
            self.server.requests.clear()
            self.assertEqual(self.sent_back({'extra': first}, {'extra': then})['extra'], then)

    @waiting
    def test_a_list_sent_whole_with_every_chunk_goes_back_once(self):
        cite = [{'type': 'url_citation', 'url_citation': {'url': 'http://e/%d' % i}}
                for i in range(2)]
        reply = self.sent_back(*[{'annotations': cite}] * 5)
        self.assertEqual(reply['annotations'], cite)


class CutInRound9(BantamCase):
    """Behaviours left out of bantam.py (README "Known limits"), each as a port may keep it."""

    @waiting
    def test_a_refusal_is_shown_and_kept_as_the_answer(self):
        self.script({'raw': b''.join([sse(chunk({'content': None, 'refusal': 'I cannot help '
                                                 'with that.'})), sse(chunk({}, 'stop')),
                                      b'data: [DONE]\n\n'])})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout, 'I cannot help with that.\n')

    @waiting
    def test_content_sent_as_a_list_of_parts_is_shown(self):
        parts = [{'type': 'text', 'text': 'first part, '}, {'type': 'text', 'text': 'second'}]
        self.script({'raw': b''.join([sse(chunk({'content': parts})), sse(chunk({}, 'stop')),
                                      b'data: [DONE]\n\n'])})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout, 'first part, second\n')

    @waiting
    def test_a_bad_line_of_model_cfg_is_named_by_its_number(self):
        self.append_config('apikey=sk-secret-value')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertIn('line 8 of model.cfg', proc.stderr)
        self.assertNotIn('apikey', proc.stderr)


class Round10(BantamCase):
    """A stalled stream, a line typed ahead, model.cfg lines named, a command the shell cannot
    take: rows that wait."""

    @waiting
    def test_silent_again_says_the_model_gave_no_answer(self):
        self.script({'calls': [('shell_exec', {'command': 'echo ran'})]}, {'text': ''},
                    {'text': ''})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn('no answer', proc.stderr)

    @waiting
    def test_a_line_typed_during_a_turn_is_its_own_prompt(self):
        hold = threading.Event()
        self.addCleanup(hold.set)
        self.script({'hold': hold, 'text': 'the first answer'}, {'text': 'the second answer'},
                    {'text': 'the third answer'})
        session = self.start_repl()
        session.send('first\r')
        self.assertTrue(wait_until(lambda: self.server.requests))
        session.send('typed ahead\r')
        hold.set()
        session.expect('the first answer')
        # Built, the typed line goes at once as the next prompt; today it waits at the prompt.
        self.assertTrue(wait_until(lambda: len(self.server.requests) == 2, 2))
        self.assertEqual(self.sent(1)[-1], {'role': 'user', 'content': 'typed ahead'})

    @waiting
    def test_keep_alive_comments_hold_no_turn(self):
        answer = b'data: {"choices":[{"index":0,"delta":{"content":"unstuck"},' \
                 b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        url, stop = keep_alive_server(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n'
                                      b'Connection: close\r\n\r\n' + answer)
        self.addCleanup(stop)
        self.config(timeout=1, color='never')
        self.append_config('endpoint=' + url)
        proc = self.start_bantam()
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.kill)
        try:
            out, err = proc.communicate(timeout=3)  # (when built: 1 s, a retry, the answer)
        except subprocess.TimeoutExpired:
            self.fail('keep-alive comments hold the turn past timeout')
        self.assertIn('unstuck', out, err)

    @waiting
    def test_a_blank_summary_changes_nothing_and_says_so(self):
        self.script({'text': 'the answer'}, {'text': '\n\n'}, {'text': 'a retried summary'})
        proc = self.run_repl('the task', '/compact')
        self.assertEqual(len(self.server.requests), 2, proc.stderr)
        self.assertIn('summary', proc.stderr)
        self.assertEqual(self.autosaved()[1]['content'], 'the task')

    @waiting
    def test_a_bad_value_of_model_cfg_is_named_by_file_line_and_setting(self):
        self.append_config('temperature=warm')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertIn('line 8 of', proc.stderr)
        self.assertIn('temperature', proc.stderr)
        self.assertEqual(self.server.requests, [])

    @waiting
    def test_a_key_that_cannot_go_in_a_header_is_named_at_start_up(self):
        self.append_config('api_key=sk-\u201cpasted-from-a-document-0123456789\u201d')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertIn('api_key', proc.stderr)
        self.assertNotIn('pasted', proc.stderr)
        self.assertEqual(self.server.requests, [])

    @waiting
    def test_a_command_the_shell_cannot_take_is_the_calls_error(self):
        self.script({'calls': [('shell_exec', {'command': 'echo a\x00b'})]}, {'text': 'went on'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(self.sent(1)[-1]['content'].startswith('error: '), self.sent(1)[-1])


class LeftOut(BantamCase):
    """Rules left out of bantam.py to make room for the rows users meet most (README "Known
    limits"); each test asserts the rule as it was."""

    @waiting
    def test_a_linked_agents_md_is_said_to_be_left_out(self):
        os.symlink('/etc/hostname', os.path.join(self.cwd, 'AGENTS.md'))
        self.script({'text': 'ok'})
        proc = self.run_bantam()
        self.assertIn('AGENTS.md is left out: it is a link', proc.stderr)


class HelpSaysTheKeys(BantamCase):
    @waiting  # /help names the commands only
    def test_help_says_ctrl_j_adds_a_line(self):
        s = self.start_repl()
        self.ask(s, '/help', '/compact')
        self.assertIn('Ctrl+J', s.text)


class NothingLost(BantamCase):
    """Nothing lost, and the terminal: rows that wait."""

    @waiting
    def test_a_refusal_that_quotes_the_users_words_strips_nothing(self):
        words = {'error': {'message': "Unsupported prompt: 'what is reasoning_content: explain' "
                                      "was flagged", 'type': 'invalid_request_error'}}
        rule = Rule(lambda messages: any(m.get('tool_calls') and 'reasoning_content' not in m
                                         for m in messages),
                    served('../sent-back/deepseek-400-missing-reasoning-content.json', 400),
                    [stream({'reasoning_content': 'Plan.'}, call_delta(), finish='tool_calls'),
                     {'text': 'listed'}, {'status': 400, 'json': words}, {'text': 'explained'}])
        self.server.default = rule
        proc = self.run_repl('list the files', 'what is reasoning_content: explain', 'again')
        self.assertIn('explained', proc.stdout, proc.stderr[-800:])
        self.assertNotIn('refused reasoning_content', proc.stderr)

    @waiting
    def test_a_save_is_never_cut_in_half_by_a_signal(self):
        os.makedirs(self.sessions())
        big = [{'role': 'system', 'content': 'big'}]
        big += [{'role': 'user', 'content': 'x' * 1000000} for _ in range(12)]
        big.append({'role': 'assistant', 'content': 'old answer'})
        with open(os.path.join(self.sessions(), 'big.json'), 'w') as f:
            json.dump({'time': 'then', 'summary': 'big', 'messages': big}, f)
        self.script({'text': 'the new answer'})
        session = self.start_repl()
        self.ask(session, '/load big', '> ')  # the prompt comes back once the /load is saved
        names = set(os.listdir(self.sessions()))
        session.send('go on\r')
        session.expect('the new answer')
        # Stop it while it writes the turn: a new file or folder appears in the sessions folder.
        wait_until(lambda: set(os.listdir(self.sessions())) - names - {'autosave.json'}, 10,
                   0.001)
        session.proc.send_signal(signal.SIGTERM)
        session.proc.send_signal(signal.SIGTERM)
        session.wait()
        with open(os.path.join(self.sessions(), 'autosave.json')) as f:
            self.assertEqual(json.load(f)['messages'][-1]['content'], 'the new answer')
        for name in os.listdir(self.sessions()):
            self.assertTrue(name.endswith('.json'), name)

    @waiting
    def test_a_failing_stdout_ends_the_repl(self):
        with open('/dev/full', 'w') as full:
            repl = subprocess.Popen(CMD, cwd=self.cwd, env=self.env(), stdin=subprocess.PIPE,
                                    stdout=full, stderr=subprocess.DEVNULL)
        self.addCleanup(repl.wait)
        self.addCleanup(repl.kill)
        try:
            repl.communicate(b'hello\n', timeout=2)
        except subprocess.TimeoutExpired:
            self.fail('the REPL goes on printing its error about the full stdout')

    @waiting
    def test_load_of_an_odd_file_is_one_line_and_the_repl_goes_on(self):
        os.makedirs(self.sessions())
        for name, messages in (('odd', 'hello'), ('empty', [])):
            with open(os.path.join(self.sessions(), name + '.json'), 'w') as f:
                json.dump({'messages': messages}, f)
        self.script({'text': 'still here'})
        proc = self.run_repl('/load odd', '/load empty', 'are you there?')
        self.assertIn('still here', proc.stdout, proc.stderr)
        self.assertEqual(self.sent()[1:], [{'role': 'user', 'content': 'are you there?'}])

    @waiting
    def test_text_the_terminal_cannot_encode_is_shown_replaced(self):
        self.script({'text': 'caf\u00e9 \U0001f600 done'})
        proc = self.run_bantam(env={'PYTHONIOENCODING': 'latin-1'})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('done', proc.stdout)

    @waiting
    def test_a_big_kept_field_cannot_fill_the_window(self):
        trace = 'x' * 100000
        window = Window(60000, body('openai-error-400-context-length-exceeded'), [
            stream({'reasoning_trace': trace, 'content': 'first answer'}), {'text': 'second'}])
        self.server.default = window
        proc = self.run_repl('first', 'second')
        self.assertIn('second', proc.stdout, proc.stderr[-500:])

    @waiting
    def test_two_repls_histories_add_up(self):
        self.script({'text': 'first answer'}, {'text': 'second answer'})
        one, two = self.start_repl(), self.start_repl()
        self.ask(one, 'alpha line', 'first answer')
        self.ask(two, 'beta line', 'second answer')
        for session in (one, two):
            session.wait_for_prompt()
            session.send('/quit\r')
            session.proc.wait(timeout=20)
        with open(os.path.join(self.home, '.bantam_history')) as f:
            history = f.read()
        self.assertIn('alpha line', history)
        self.assertIn('beta line', history)

    @waiting
    def test_the_tokens_a_turn_cost_are_shown(self):
        self.script({'text': 'ok', 'usage': {'prompt_tokens': 12, 'completion_tokens': 3,
                                             'total_tokens': 15}})
        proc = self.run_bantam()
        self.assertIn('include_usage', json.dumps(self.server.requests[0]['body']))
        self.assertIn('12', proc.stderr)
