"""About the Python bantam.py itself (skipped when BANTAM_CMD names another program): the line
budget of the design card, and the README's table of observable strings; and about the README:
every cross-reference to a step of the algorithm names a step that exists."""
import ast
import io
import os
import re
import tokenize
import unittest

from helpers import BANTAM, ROOT, python_only


def source_lines(path):
    """Lines holding code: not blank, not only a comment (docstrings count)."""
    with open(path, 'rb') as f:
        tokens = tokenize.tokenize(io.BytesIO(f.read()).readline)
        skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING,
                tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
        return {n for t in tokens if t.type not in skip for n in range(t.start[0], t.end[0] + 1)}


def readme_strings():
    """The exact texts of the README's table of observable strings, escapes decoded."""
    with open(os.path.join(ROOT, 'README.md')) as f:
        section = f.read().split('## Observable strings')[1].split('\n## ')[0]
    rows = [line.split(' | ') for line in section.splitlines() if line.startswith('| ')]
    texts = [text for row in rows[2:] for text in re.findall('`([^`]+)`', row[1])]
    return [text.replace('\\n', '\n').replace('\\|', '|') for text in texts]


@python_only
class Porting(unittest.TestCase):
    def test_under_300_source_lines(self):
        self.assertLess(len(source_lines(BANTAM)), 300)

    def test_every_string_of_the_readme_table_is_in_bantam_py(self):
        with open(BANTAM) as f:
            tree = ast.parse(f.read())
        values = [getattr(node, 'value', getattr(node, 's', None)) for node in ast.walk(tree)]
        constants = [value for value in values if isinstance(value, str)]  # ast.Str before 3.8
        strings = readme_strings()
        self.assertGreater(len(strings), 40)
        for text in strings:
            self.assertTrue(any(text in constant for constant in constants), repr(text))


class Readme(unittest.TestCase):
    def test_every_cross_reference_names_a_step_that_exists(self):
        # "(2.6)" or ", 2.6)" is section 2, step 6 of "The algorithm": a top-level numbered item.
        with open(os.path.join(ROOT, 'README.md')) as f:
            text = f.read()
        algorithm = text.split('## The algorithm')[1].split('\n## ')[0]
        steps = {}
        for section in re.split(r'\n### ', algorithm)[1:]:
            number = int(section.split('.')[0])
            steps[number] = len(re.findall(r'(?m)^\d+\. ', section))
        references = re.findall(r'[(,] ?([1-7])\.(\d+)\)', text)
        self.assertGreater(len(references), 30)
        for section, step in references:
            self.assertIn(int(section), steps, '%s.%s' % (section, step))
            self.assertLessEqual(int(step), steps[int(section)], '%s.%s' % (section, step))
