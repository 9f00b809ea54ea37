"""A cloned project's AGENTS.md is outside text, read only as a plain file of the project (issues
38, 49, 54), and a child at the limit tells its parent why (issues 38, 55)."""
import json
import os

from helpers import BantamCase

USER_KEY = 'sk-user-own-key-0123456789abcdef'    # the user's OPENAI_API_KEY
GITHUB = 'ghp_0123456789abcdefGHIJKLMNOPQRSTUVwxyz'  # another secret of the environment
CFG_KEY = 'sk-model-cfg-key-fedcba9876543210'    # the key model.cfg sends


class ProjectRules(BantamCase):
    def keyed(self):
        self.config(stream='true', color='never', timeout=10, api_key=CFG_KEY)
        return {'OPENAI_API_KEY': USER_KEY}

    def assert_no_request_carries(self, key):
        for request in self.server.requests:
            self.assertNotIn(key, json.dumps(request['body']))

    def test_an_agents_md_linked_to_a_file_outside_is_left_out(self):
        secrets = os.path.join(self.home, '.env')
        with open(secrets, 'w') as f:
            f.write('export OPENAI_API_KEY=%s\nexport GITHUB_TOKEN=%s\n' % (USER_KEY, GITHUB))
        os.symlink(secrets, os.path.join(self.cwd, 'AGENTS.md'))
        self.script({'text': 'ok'})
        proc = self.run_bantam(env=self.keyed())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_no_request_carries(USER_KEY)
        self.assert_no_request_carries(GITHUB)
        self.assertNotIn('export', self.sent()[0]['content'])
        self.assertNotIn(GITHUB, proc.stderr)

    def test_an_agents_md_that_writes_either_key_sends_neither(self):
        with open(os.path.join(self.cwd, 'AGENTS.md'), 'w') as f:
            f.write('Use %s, or %s.\n' % (USER_KEY, CFG_KEY))
        self.script({'text': 'ok'})
        proc = self.run_bantam(env=self.keyed())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_no_request_carries(USER_KEY)
        self.assert_no_request_carries(CFG_KEY)

    def test_a_binary_agents_md_is_read_and_the_run_answers(self):
        with open(os.path.join(self.cwd, 'AGENTS.md'), 'wb') as f:
            f.write(b'Rules: \xff\xfe\x00\x9b[31m be brief \x89PNG\r\n')
        self.script({'text': 'the answer'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('the answer', proc.stdout)
        system = self.sent()[0]['content']
        self.assertIn('Rules: \ufffd\ufffd', system)
        self.assertIn('be brief', system)
        self.assertNotIn('\x00', system)


class ChildAtTheLimit(BantamCase):
    def test_a_child_that_stopped_tells_its_parent_why(self):
        # Issue 55 row 2: the child's stop line is its result (round 8 gave "(no answer)").
        self.config(stream='true', color='never', timeout=10, max_al_iterations=2)
        self.script({'calls': [('run_subagent', {'prompt': 'loop'})]},
                    {'calls': [('shell_exec', {'command': 'echo 1'})]},
                    {'calls': [('shell_exec', {'command': 'echo 2'})]},
                    {'text': 'parent done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('parent done', proc.stdout)
        result = self.sent()[-1]
        self.assertEqual(result['role'], 'tool')
        self.assertEqual(result['content'], 'stopped after max_al_iterations=2 requests')
