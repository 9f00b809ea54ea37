"""The core spec, driven as a user drives it: one-shot runs against the fake server."""
import json
import os
import shutil
import signal
import subprocess
import sys

from helpers import BANTAM, BantamCase, alive, python_only, wait_until, waiting


class Config(BantamCase):
    def test_cfg_is_read_from_the_users_own_folder_over_defaults(self):
        self.config(temperature='0.25', stream='false')
        self.assertEqual(self.run_bantam().returncode, 0)
        body = self.server.requests[0]['body']
        self.assertEqual((body['model'], body['temperature'], body['stream']),
                         ('fake-model', 0.25, False))

    @python_only
    def test_cfg_beside_the_script_when_the_user_has_none(self):
        copy = os.path.join(self.dir, 'install')
        os.makedirs(copy)
        shutil.copy(BANTAM, copy)
        os.rename(self.user_file('model.cfg'), os.path.join(copy, 'model.cfg'))
        with open(os.path.join(copy, 'system.txt'), 'w') as f:
            f.write('SYSTEM FROM BESIDE THE SCRIPT')
        proc = subprocess.run([sys.executable, os.path.join(copy, 'bantam.py'),
                               self.prompt_file()], cwd=self.cwd, env=self.env(),
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.sent()[0]['content'], 'SYSTEM FROM BESIDE THE SCRIPT')

    def test_system_txt_from_the_users_own_folder(self):
        with open(self.user_file('system.txt'), 'w') as f:
            f.write('You are a test.\n')
        self.run_bantam()
        self.assertEqual(self.sent()[0], {'role': 'system', 'content': 'You are a test.'})

    def test_agents_md_of_the_working_directory_follows_system_txt(self):
        # The project's own rules (issue 33), for the agent and its children alike.
        with open(self.user_file('system.txt'), 'w') as f:
            f.write('You are a test.\n')
        with open(os.path.join(self.cwd, 'AGENTS.md'), 'w') as f:
            f.write('# Rules\nRun the tests with `make check`.\n')
        with open(os.path.join(os.path.dirname(self.cwd), 'AGENTS.md'), 'w') as f:
            f.write('A parent folder is not read.')
        self.script({'calls': [('run_subagent', {'prompt': 'check'})]}, {'text': 'child done'},
                    {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rules = 'You are a test.\n\n# Rules\nRun the tests with `make check`.'
        self.assertEqual(self.sent(0)[0], {'role': 'system', 'content': rules})
        self.assertEqual(self.sent(1)[0]['content'], rules + '\n\nImportant: this is a child agent')

    def test_default_system_prompt_without_system_txt(self):
        self.run_bantam()
        self.assertIn('shell_exec', self.sent()[0]['content'])

    def test_a_bad_value_is_one_line_in_pythons_words(self):
        # (round 9: the line's number was cut for lines; Python's words name the value)
        self.config(temperature='warm')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr, "bantam: ValueError: could not convert string to float: "
                                      "'warm'\n")
        self.assertEqual(self.server.requests, [])

    def test_an_unknown_key_is_an_error_that_does_not_echo_its_value(self):
        self.append_config('apikey=sk-secret-value')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr, "bantam: KeyError: 'apikey'\n")

    def test_a_line_without_equals_is_an_error_even_for_a_text_key(self):
        self.append_config('model')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertEqual(self.server.requests, [])

    def test_a_byte_order_mark_is_allowed(self):
        # Notepad saves UTF-8 with a byte-order mark
        with open(self.user_file('model.cfg'), 'rb') as f:
            cfg = f.read()
        with open(self.user_file('model.cfg'), 'wb') as f:
            f.write(b'\xef\xbb\xbf' + cfg)
        with open(self.user_file('system.txt'), 'wb') as f:
            f.write(b'\xef\xbb\xbfYou are a test.')
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.sent()[0]['content'], 'You are a test.')

    def test_api_key_falls_back_to_openai_api_key(self):
        self.run_bantam(env={'OPENAI_API_KEY': 'sk-from-env'})
        self.assertEqual(self.server.requests[0]['headers'].get('Authorization'),
                         'Bearer sk-from-env')

    def test_no_key_means_no_authorization_header(self):
        self.run_bantam()
        self.assertNotIn('Authorization', self.server.requests[0]['headers'])

    @waiting  # the endpoint is not checked (README "Known limits")
    def test_an_endpoint_that_is_not_http_is_a_bad_setting(self):
        # No scheme, file: or data: (urllib opens all three): one line naming endpoint, exit 1,
        # no request (issue 54 row 3).
        for endpoint in ('localhost:8080', 'file:.', 'data:,hello', 'ftp://example.com/v1'):
            self.append_config('endpoint=' + endpoint)
            proc = self.run_bantam(timeout=2)  # (with no check: retried for 12 s, so a failure)
            self.assertEqual((proc.returncode, proc.stdout), (1, ''), endpoint)
            self.assertEqual(proc.stderr, 'bantam: bad setting: endpoint is not an http:// or '
                                          'https:// URL\n', endpoint)
        self.assertEqual(self.server.requests, [])


class ChatClient(BantamCase):
    def test_request_shape(self):
        self.config(api_key='sk-test-key', temperature='0.5')
        self.run_bantam(prompt='what is up')
        request = self.server.requests[0]
        self.assertEqual(request['path'], '/v1/chat/completions')
        self.assertEqual(request['headers']['User-Agent'], 'Mozilla/5.0 (compatible; Bantam/1.0)')
        self.assertEqual(request['headers']['Authorization'], 'Bearer sk-test-key')
        body = request['body']
        self.assertEqual(body['messages'][1], {'role': 'user', 'content': 'what is up'})
        self.assertEqual([t['function']['name'] for t in body['tools']],
                         ['shell_exec', 'run_subagent'])
        self.assertTrue(body['stream'])

    def test_retries_then_succeeds(self):
        self.script({'status': 503, 'json': {'error': {'message': 'overloaded'}}},
                    {'drop': True}, {'text': 'finally'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, 'finally\n')
        self.assertEqual(len(self.server.requests), 3)
        self.assertIn('HTTP 503: overloaded', proc.stderr)
        self.assertEqual(proc.stderr.count('retrying in 1 s'), 2)

    def test_fibonacci_schedule_then_a_clear_error_and_exit_1(self):
        self.server.default = {'status': 500, 'json': {'error': {'message': 'boom'}}}
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        times = [r['time'] for r in self.server.requests]
        self.assertEqual(len(times), 6)
        gaps = [b - a for a, b in zip(times, times[1:])]
        for gap, delay in zip(gaps, [1, 1, 2, 3, 5]):
            self.assertGreaterEqual(gap, delay - 0.05)
            self.assertLess(gap, delay + 1.5)
        self.assertIn('gave up after 5 retries', proc.stderr.splitlines()[-1])
        self.assertNotIn('Traceback', proc.stderr)

    def test_ctrl_c_during_a_retry_wait_ends_with_130(self):
        self.server.default = {'status': 500, 'json': {'error': {'message': 'boom'}}}
        proc = self.start_bantam()
        self.assertTrue(wait_until(lambda: len(self.server.requests) >= 2))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 130)
        self.assertLess(len(self.server.requests), 4)
        self.assertNotIn('Traceback', err)

    def test_timeout_bounds_a_stalled_stream(self):
        self.config(timeout=1)
        self.script({'text': 'stalled reply', 'stall': 30, 'after': 2}, {'text': 'second try'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('timed out', proc.stderr)
        self.assertTrue(proc.stdout.endswith('second try\n'))


class Streaming(BantamCase):
    def test_text_and_reasoning_with_markers(self):
        self.script({'reasoning': 'Let me think.', 'text': 'The answer is 42.'})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout, '--- reasoning start ---\nLet me think.\n'
                                      '--- reasoning end ---\nThe answer is 42.\n')
        self.assertEqual(self.server.requests[0]['body']['stream'], True)

    def test_non_streaming_reasoning_gets_the_same_markers(self):
        self.config(stream='false')
        self.script({'reasoning': 'Hmm.', 'text': 'Done.'})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout,
                         '--- reasoning start ---\nHmm.\n--- reasoning end ---\nDone.\n')

    def test_non_streaming_reasoning_field(self):
        self.config(stream='false')
        body = {'choices': [{'index': 0, 'finish_reason': 'stop', 'message': {
            'role': 'assistant', 'content': 'Yes.', 'reasoning': 'Quick check.'}}]}
        self.script({'raw': json.dumps(body).encode(), 'type': 'application/json'})
        self.assertEqual(self.run_bantam().stdout,
                         '--- reasoning start ---\nQuick check.\n--- reasoning end ---\nYes.\n')

    def test_chunks_are_flushed_as_they_arrive(self):
        self.script({'pieces': ['first ', 'second'], 'stall': 30, 'after': 2})
        proc = self.start_bantam()
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.kill)
        line = proc.stdout.read(6)  # blocks until the first piece is written and flushed
        self.assertEqual(line, 'first ')

    def test_several_tool_calls_in_one_reply_run_in_order(self):
        self.script({'calls': [('shell_exec', {'command': 'echo one'}, 'id_a'),
                               ('shell_exec', {'command': 'echo two'}, 'id_b')]},
                    {'text': 'both ran'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0)
        messages = self.sent()
        self.assertEqual([m['role'] for m in messages[2:]], ['assistant', 'tool', 'tool'])
        self.assertEqual([(m['tool_call_id'], m['content']) for m in messages[3:]],
                         [('id_a', 'one\n\n\nexit: 0'), ('id_b', 'two\n\n\nexit: 0')])
        self.assertEqual(proc.stderr.count('[tool call: shell_exec('), 2)
        self.assertEqual(proc.stderr.count('[tool result: shell_exec]'), 2)


class Tools(BantamCase):
    def tool_reply(self, *calls):
        self.script({'calls': list(calls)}, {'text': 'ok'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_valid_conversation(self.sent())
        return [m['content'] for m in self.sent() if m['role'] == 'tool'], proc

    def test_shell_output_and_exit_code(self):
        command = 'echo out; echo err >&2; exit 3'
        results, proc = self.tool_reply(('shell_exec', {'command': command}))
        self.assertEqual(results, ['out\nerr\n\n\nexit: 3'])
        self.assertIn('[tool call: shell_exec({"command": "echo out; echo err >&2; exit 3"})]',
                      proc.stderr)

    def test_invalid_json_arguments_are_explained(self):
        results, _ = self.tool_reply(('shell_exec', '{"command": "ls'))
        self.assertIn('error', results[0])
        self.assertIn('command', results[0])

    def test_arguments_that_are_not_json_are_not_sent_back(self):
        # llama.cpp answers HTTP 500 to a conversation holding a call whose arguments it cannot
        # parse (a reply cut off by max_tokens in the middle of a call, say): the stored call
        # gets {} and its result says what was wrong.
        self.script({'calls': [('shell_exec', '{"command": "find . -name x \\n find')]},
                    {'calls': [('shell_exec', '["ls"]')]}, {'text': 'ok'})
        proc = self.run_bantam()
        self.assertIn('[tool call: shell_exec({"command": "find . -name x', proc.stderr)
        stored = [m['tool_calls'][0]['function']['arguments'] for m in self.sent()
                  if m.get('tool_calls')]
        self.assertEqual(stored, ['{}', '{}'])
        self.assertIn('no command argument', self.sent()[-1]['content'])

    def test_a_missing_argument_is_explained(self):
        results, _ = self.tool_reply(('shell_exec', {'cmd': 'ls'}))
        self.assertIn('error', results[0])
        self.assertIn('command', results[0])

    def test_an_unknown_tool_is_explained_and_the_loop_goes_on(self):
        results, proc = self.tool_reply(('read_file', {'path': 'x'}))
        self.assertEqual("error: there is no tool 'read_file'", results[0])
        self.assertEqual(len(self.server.requests), 2)

    def test_stdin_is_dev_null(self):
        results, _ = self.tool_reply(('shell_exec', {'command': 'cat; echo read-done'}))
        self.assertEqual(results, ['read-done\n\n\nexit: 0'])

    def test_not_utf8_output_is_replaced_not_a_crash(self):
        results, _ = self.tool_reply(('shell_exec', {'command': "printf 'a\\377b'"}))
        self.assertEqual(results, ['a\ufffdb\n\nexit: 0'])

    def test_timeout_kills_the_whole_group_and_keeps_the_output(self):
        self.config(shell_timeout=1)
        pidfile = os.path.join(self.cwd, 'bg.pid')
        results, _ = self.tool_reply(
            ('shell_exec', {'command': 'sleep 60 & echo $! > %s; echo begun; sleep 60' % pidfile}))
        self.assertIn('begun', results[0])
        self.assertIn('timeout', results[0])
        with open(pidfile) as f:
            background = int(f.read())
        self.assertTrue(wait_until(lambda: not alive(background), 5), 'background child lives')


class Subagent(BantamCase):
    def test_child_conversation_is_separate_and_returns_its_last_answer(self):
        self.script({'calls': [('run_subagent', {'prompt': 'count the files'})]},
                    {'calls': [('shell_exec', {'command': 'echo 3'})]},
                    {'text': 'There are 3 files.'},
                    {'text': 'The child says 3.'})
        proc = self.run_bantam(prompt='delegate please')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        child_first, child_last, parent_last = (self.sent(1), self.sent(2), self.sent(3))
        self.assertTrue(child_first[0]['content'].endswith('\n\nImportant: this is a child agent'))
        self.assertEqual(child_first[1], {'role': 'user', 'content': 'count the files'})
        self.assertEqual(len(child_last), 4)
        self.assertEqual(parent_last[-1]['content'], 'There are 3 files.')
        self.assertEqual([m['role'] for m in parent_last], ['system', 'user', 'assistant', 'tool'])
        self.assertIn('The child says 3.', proc.stdout)

    @waiting  # a child's answer is not cut (README "Known limits")
    def test_a_long_child_answer_is_cut_to_max_tool_res(self):
        self.config(max_tool_res=300)
        self.script({'calls': [('run_subagent', {'prompt': 'talk a lot'})]},
                    {'text': 'a' * 200 + 'b' * 1000}, {'text': 'parent done'})
        self.run_bantam()
        self.assertEqual(self.sent()[-1]['content'], 'a' * 200 + 'b' * 100)

    def test_a_child_has_no_run_subagent_tool(self):
        self.script({'calls': [('run_subagent', {'prompt': 'go deeper'})]},
                    {'calls': [('run_subagent', {'prompt': 'and deeper'})]},
                    {'text': 'child gives up'}, {'text': 'parent done'})
        self.run_bantam()
        child_tools = [t['function']['name'] for t in self.server.requests[1]['body']['tools']]
        self.assertEqual(child_tools, ['shell_exec'])
        self.assertIn("no tool 'run_subagent'", self.sent(2)[-1]['content'])


class Loop(BantamCase):
    def test_stops_after_max_al_iterations_requests(self):
        self.config(max_al_iterations=3)
        self.server.default = lambda body: {'calls': [
            ('shell_exec', {'command': 'echo %d' % len(body['messages'])})]}
        proc = self.run_bantam()
        self.assertEqual(len(self.server.requests), 3)
        self.assertIn('stopped after max_al_iterations=3 requests', proc.stderr.splitlines())
        self.assertEqual(proc.returncode, 2)  # stopped before an answer (issue 33)

    def test_exit_0_for_an_answer_after_tool_calls(self):
        self.config(max_al_iterations=3)
        self.script({'calls': [('shell_exec', {'command': 'true'})]}, {'text': 'done'})
        self.assertEqual(self.run_bantam().returncode, 0)

    def test_the_repl_goes_on_after_a_turn_stopped_at_the_limit(self):
        self.config(max_al_iterations=1)
        self.script({'calls': [('shell_exec', {'command': 'true'})]}, {'text': 'next'})
        proc = self.run_repl('loop', 'then')
        self.assertEqual(proc.returncode, 0)
        self.assertIn('next', proc.stdout)

    def test_stops_when_a_reply_has_no_tool_calls(self):
        self.script({'text': 'no tools needed'})
        self.run_bantam()
        self.assertEqual(len(self.server.requests), 1)

    def test_an_empty_reply_is_not_kept(self):
        # No answer, and no empty message: a prompt that got no reply is taken back.
        self.script({'text': ''}, {'text': 'after'})
        proc = self.run_repl('first', 'second')
        self.assertEqual(proc.returncode, 0)
        self.assertEqual([m['content'] for m in self.sent()[1:]], ['second'])


class OneShot(BantamCase):
    def test_exit_0_on_success(self):
        self.script({'text': 'fine'})
        proc = self.run_bantam()
        self.assertEqual((proc.returncode, proc.stdout), (0, 'fine\n'))

    def test_a_missing_prompt_file_is_one_line_and_exit_1(self):
        proc = self.run_bantam('no-such-file.txt')
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)
        self.assertIn('no-such-file.txt', proc.stderr)
        self.assertEqual(self.server.requests, [])

    def test_an_unreadable_prompt_file(self):
        os.makedirs(os.path.join(self.cwd, 'adir'))
        proc = self.run_bantam('adir')
        self.assertEqual(proc.returncode, 1)
        self.assertNotIn('Traceback', proc.stderr)


class Colours(BantamCase):
    def colour_run(self, color, env=None):
        self.config(color=color)
        self.script({'reasoning': 'think', 'calls': [('shell_exec', {'command': 'echo x'})]},
                    {'text': 'answer'})
        proc = self.run_bantam(env=env)
        self.assertNotIn('\x1b', json.dumps(self.server.bodies()))
        return proc

    def test_always_colours_traces_and_reasoning(self):
        proc = self.colour_run('always')
        self.assertIn('\x1b[33m[tool call:', proc.stderr)
        self.assertIn('\x1b[32m[tool result: shell_exec]', proc.stderr)
        self.assertIn('\x1b[36m--- reasoning start ---', proc.stdout)
        self.assertIn('\x1b[2mthink', proc.stdout)

    def test_auto_does_not_colour_a_pipe(self):
        proc = self.colour_run('auto')
        self.assertNotIn('\x1b', proc.stdout + proc.stderr)

    def test_no_color_and_bantam_no_color_win(self):
        for name in ('NO_COLOR', 'BANTAM_NO_COLOR'):
            self.server.requests.clear()
            proc = self.colour_run('always', env={name: '1'})
            self.assertNotIn('\x1b', proc.stdout + proc.stderr, name)
