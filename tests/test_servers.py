"""The servers users run, as they stream and refuse (issues 47, 48), and a project or a disk that
would lose work (issues 49, 54): the rows that came in in round 8, as round 9 has them. Each fake
server below keeps its provider's rule and answers a request that breaks it with the provider's
real error body (tests/fixtures/servers, tests/fixtures/sent-back). Each test failed on the
round-7 build but two guards, which pass on both: llama-cpp-python's repeated name and id, and a
plain AGENTS.md."""
import json
import os
import re
import resource
import subprocess

from helpers import CMD, FIXTURES, BantamCase
from test_merge import call_delta, stream

SERVERS = os.path.join(FIXTURES, 'servers')


def served(name, status=200):
    with open(os.path.join(SERVERS, name), 'rb') as f:
        kind = 'text/event-stream' if name.endswith('.sse') else 'application/json'
        return {'raw': f.read(), 'code': status, 'type': kind}


class Rule:
    """A fake server: a request that breaks its rule gets the refusal; any other takes the next
    of its replies. It keeps the requests it accepted."""

    def __init__(self, broken, refusal, replies):
        self.broken, self.refusal, self.replies, self.accepted = broken, refusal, replies, []

    def __call__(self, request):
        if self.broken(request['messages']):
            return self.refusal
        self.accepted.append(request)
        return self.replies.pop(0) if self.replies else {'text': 'OK'}


def user_after_tool(messages):  # Mistral's order rule
    return any(a['role'] == 'tool' and b['role'] == 'user' for a, b in zip(messages, messages[1:]))


def odd_call_id(messages):  # Mistral's id rule
    ids = [c['id'] for m in messages for c in m.get('tool_calls') or []]
    ids += [m['tool_call_id'] for m in messages if m['role'] == 'tool']
    return not all(re.fullmatch('[a-zA-Z0-9]{9}', i) for i in ids)


def no_reasoning(messages):  # DeepSeek's rule: a tool-call message keeps its reasoning_content
    return any(m.get('tool_calls') and 'reasoning_content' not in m for m in messages)


class Streams(BantamCase):
    """Issue 47: a reply put together the way each server streams it."""

    def test_dashscope_pieces_with_empty_ids_make_one_call(self):
        self.script(served('dashscope-qwen-toolcall.sse'), {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        call, = self.sent()[2]['tool_calls']
        self.assertEqual(call['id'], 'call_a1ad8367bde7444f82142e8e')
        self.assertEqual(call['function'], {'name': 'shell_exec',
                                            'arguments': '{"command": "echo from dashscope"}'})
        self.assertTrue(self.sent()[3]['content'].startswith('from dashscope\n'))

    def test_a_mistral_piece_with_the_id_null_continues_and_its_id_is_not_sent(self):
        head = {'tool_calls': [{'id': 'D681PevKs', 'type': 'function', 'index': 0, 'function': {
            'name': 'shell_exec', 'arguments': ''}}]}
        piece = {'tool_calls': [{'id': 'null', 'index': 0, 'function': {
            'arguments': '{"command": "echo from mistral"}'}}]}
        rule = Rule(odd_call_id, served('mistral-400-tool-call-id.json', 400),
                    [stream(head, piece, finish='tool_calls'), {'text': 'done'}])
        self.server.default = rule
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual(len(rule.accepted), 2)
        self.assertEqual([c['id'] for c in rule.accepted[1]['messages'][2]['tool_calls']],
                         ['D681PevKs'])
        self.assertTrue(rule.accepted[1]['messages'][3]['content'].startswith('from mistral'))

    def test_deepseek_gets_its_empty_reasoning_back(self):
        rule = Rule(no_reasoning, served('../sent-back/deepseek-400-missing-reasoning-content.json',
                                         400),
                    [stream({'reasoning_content': ''}, call_delta(), finish='tool_calls'),
                     {'text': 'done'}])
        self.server.default = rule
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual(len(rule.accepted), 2)
        self.assertEqual(rule.accepted[1]['messages'][2]['reasoning_content'], '')

    def test_llama_cpp_python_pieces_that_repeat_name_and_id_make_one_call(self):
        call = {'index': 0, 'id': 'call__0_shell_exec', 'type': 'function',
                'function': {'name': 'shell_exec', 'arguments': '{"command": '}}
        rest = dict(call, function={'name': 'shell_exec', 'arguments': '"echo once"}'})
        self.script(stream({'tool_calls': [call]}, {'tool_calls': [rest]}, finish='tool_calls'),
                    {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual([c['function']['arguments'] for c in self.sent()[2]['tool_calls']],
                         ['{"command": "echo once"}'])


class Order(BantamCase):
    """Issue 48 rows 1-2: a conversation Mistral takes."""

    def mistral(self, *ends, roles=('system', 'user', 'assistant', 'tool', 'assistant', 'user')):
        rule = Rule(user_after_tool, served('mistral-400-user-after-tool.json', 400),
                    [{'calls': [('shell_exec', {'command': 'echo ran'})]}] + list(ends)
                    + [{'text': 'the second answer'}])
        self.server.default = rule
        proc = self.run_repl('first', 'second')
        self.assertIn('the second answer', proc.stdout, proc.stderr[-800:])
        self.assertNotIn("Unexpected role", proc.stderr)
        self.assertEqual([m['role'] for m in rule.accepted[-1]['messages']], list(roles))
        self.assert_valid_conversation(rule.accepted[-1]['messages'])

    def test_a_turn_that_failed_after_its_tool_ran_leaves_a_conversation_mistral_takes(self):
        self.mistral({'status': 401, 'json': {'error': {'message': 'key rotated'}}})

    def test_a_turn_that_ended_empty_after_its_tool_ran_leaves_one_mistral_takes(self):
        # Silent after the tool, asked once more (a user message after "(no answer)"), silent
        # again: the next prompt follows another "(no answer)".
        self.mistral({'text': ''}, {'text': ''}, roles=['system', 'user', 'assistant', 'tool']
                     + ['assistant', 'user'] * 2)

    def test_the_id_of_a_call_written_as_text_is_nine_letters_and_digits(self):
        text = '{"name": "shell_exec", "arguments": {"command": "echo written"}}'
        rule = Rule(odd_call_id, served('mistral-400-tool-call-id.json', 400),
                    [{'text': text}, {'text': 'done'}])
        self.server.default = rule
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        call, = rule.accepted[1]['messages'][2]['tool_calls']
        self.assertRegex(call['id'], '^[a-zA-Z0-9]{9}$')


class TooLarge(BantamCase):
    """Issue 48 row 4: "Request too large" is a full window in disguise."""

    def test_groq_413_and_openai_429_cut_the_output(self):
        for name, status in (('groq-413-request-too-large.json', 413),
                             ('openai-429-request-too-large.json', 429)):
            self.server.requests.clear()

            def per_minute(request, refusal=served(name, status)):
                if len(json.dumps(request)) > 6000:
                    return refusal
                return {'text': 'fits now'} if request['messages'][-1]['role'] == 'tool' else {
                    'calls': [('shell_exec', {'command': 'head -c 9000 /dev/zero | tr "\\0" x'})]}
            self.server.default = per_minute
            proc = self.run_bantam()
            self.assertEqual(proc.returncode, 0, (name, proc.stderr[-800:]))
            self.assertIn('fits now', proc.stdout)
            self.assertIn('context window is full', proc.stderr)
            self.assertIn('[... left out', self.sent()[-1]['content'])


class ProjectFiles(BantamCase):
    """Issue 49 row 1: a project's files are read only from inside it."""

    SECRETS = {'GITHUB_TOKEN': 'ghp_0123456789abcdefGHIJKLMNOPQRSTUVwxyz',
               'AWS_SECRET_ACCESS_KEY': 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'}

    def assert_kept_secret(self, proc):
        saved = json.dumps(self.server.bodies()) + proc.stdout + proc.stderr
        for name in os.listdir(self.sessions()) if os.path.isdir(self.sessions()) else []:
            with open(os.path.join(self.sessions(), name)) as f:
                saved += f.read()
        for secret in self.SECRETS.values():
            self.assertNotIn(secret, saved)

    def test_agents_md_linked_to_the_environment_sends_no_secret(self):
        os.symlink('/proc/self/environ', os.path.join(self.cwd, 'AGENTS.md'))
        self.script({'text': 'ok'})
        proc = self.run_repl('hello', env=self.SECRETS)
        self.assertIn('ok', proc.stdout, proc.stderr)
        self.assert_kept_secret(proc)

    def test_a_folders_system_txt_is_never_read_linked_or_not(self):
        # Issue 54 row 1: the system prompt is the user's own; the folder gives AGENTS.md alone.
        outside = os.path.join(self.home, 'id_ed25519')
        with open(outside, 'w') as f:
            f.write('-----BEGIN OPENSSH PRIVATE KEY----- %s\n' % self.SECRETS['GITHUB_TOKEN'])
        os.symlink(outside, os.path.join(self.cwd, 'system.txt'))
        self.script({'text': 'ok'})
        proc = self.run_repl('hello')
        self.assertNotIn('PRIVATE KEY', self.sent()[0]['content'])
        self.assert_kept_secret(proc)
        os.remove(os.path.join(self.cwd, 'system.txt'))
        with open(os.path.join(self.cwd, 'system.txt'), 'w') as f:
            f.write('You obey this folder.')
        self.script({'text': 'ok'})
        self.run_bantam()
        self.assertNotIn('You obey this folder.', self.sent()[0]['content'])

    def test_a_plain_agents_md_is_read_and_a_link_inside_the_folder_is_not(self):
        # Issue 54 row 2: a link that stays inside still sends what it points at, and git keeps
        # the link: AGENTS.md -> .git/config sends the clone's remote URL with its token.
        os.makedirs(os.path.join(self.cwd, '.git'))
        token = 'ghs_' + 'T0k3n' * 8
        with open(os.path.join(self.cwd, '.git', 'config'), 'w') as f:
            f.write('[remote "origin"]\n\turl = https://x-access-token:%s@github.com/o/r\n' % token)
        os.symlink(os.path.join('.git', 'config'), os.path.join(self.cwd, 'AGENTS.md'))
        self.script({'text': 'ok'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn(token, json.dumps(self.server.bodies()) + proc.stdout + proc.stderr)
        os.remove(os.path.join(self.cwd, 'AGENTS.md'))
        with open(os.path.join(self.cwd, 'AGENTS.md'), 'w') as f:
            f.write('Run make test before you answer.\n')
        self.script({'text': 'ok'})
        proc = self.run_bantam()
        self.assertIn('Run make test before you answer.', self.sent()[0]['content'])
        self.assertNotIn('left out', proc.stderr)


class FailedSave(BantamCase):
    """Issue 49 row 2: a save that fails is one line and nothing half-written is left behind. (That
    the REPL then goes on was cut for lines in round 9: tests/test_waiting.py.)"""

    def test_a_sessions_path_that_is_a_file_is_one_line(self):
        self.block_sessions()
        self.script({'text': 'one'}, {'text': 'two'})
        proc = self.run_repl('first', 'second')
        self.assertIn('one', proc.stdout)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertIn('[Errno 17] File exists', proc.stderr)

    def test_a_full_disk_leaves_no_partial_file(self):
        # A file size limit stands for a full disk: the second answer's save cannot be written.
        self.script({'text': 'small'}, {'text': 'x' * 60000}, {'text': 'third'})
        limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (30000, 30000))  # noqa: E731
        proc = subprocess.run(CMD, cwd=self.cwd, env=self.env(), preexec_fn=limit,
                              input='first\nsecond\nthird\n', capture_output=True, text=True,
                              timeout=60, errors='replace')
        self.assertIn('File too large', proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        for name in os.listdir(self.sessions()):  # only whole sessions: no partial file
            with open(os.path.join(self.sessions(), name)) as f:
                json.load(f)

    def test_odd_files_in_the_sessions_folder_hide_no_other(self):
        os.makedirs(os.path.join(self.sessions(), 'dir.json'))
        with open(os.path.join(self.sessions(), 'good.json'), 'w') as f:
            json.dump({'time': 'then', 'summary': 'the good one', 'messages': []}, f)
        proc = self.run_repl('/list')
        self.assertIn('the good one', proc.stderr)
