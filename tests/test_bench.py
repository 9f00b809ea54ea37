"""The benchmark script runs and prints every row (its figures are for people, not for asserts)."""
import os
import subprocess
import sys
import unittest

from helpers import python_only

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bench.py')


@python_only
class Bench(unittest.TestCase):
    def test_quick_run_prints_every_row(self):
        proc = subprocess.run([sys.executable, BENCH, '--quick'], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for row in ('1. start-up', '2. stream', 'to a pipe', 'to a pty', '3. first token',
                    '4. tool round', 'rounds 1-10', 'spawning', '5. tools JSON', 'system prompt',
                    '6. peak RSS, one-shot', '6. peak RSS, run with a 5 MB', '7. 6000 reasoning',
                    '8. /list', '9. a reply of', '10. cleaning', '11. saving'):
            self.assertIn(row, proc.stdout)
        self.assertRegex(proc.stdout.splitlines()[-1], r'^(all goals met|missed: )')
