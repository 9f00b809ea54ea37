#!/usr/bin/env python3
# Bantam: a tiny agent that gives an OpenAI-compatible model two tools, a shell and itself.
# Usage: bantam.py [prompt.txt | -]   (no argument: the REPL; -h: help)
# The file follows the README's algorithm: configuration, chat client, tools, agentic loop,
# sessions, REPL, main.
import contextlib, glob, http.client, io, json, os, re, signal, subprocess, sys, time
import unicodedata, urllib.error, urllib.request

# ---------------------------------------------------------------- configuration
DEFAULTS = {'endpoint': 'https://api.openai.com/v1', 'model': 'gpt-4o', 'temperature': 0.7,
            'api_key': '', 'stream': True, 'color': 'auto', 'timeout': 60, 'shell_timeout': 120,
            'max_al_iterations': 1000, 'max_tool_res': 32768, 'context_window': 0,
            'reasoning_effort': '', 'include_usage': True}
BOOLS = {'true': True, 'false': False, 'yes': True, 'no': False, '1': True, '0': False}
SYSTEM = ("You are Bantam, an agent in the user's terminal. Use shell_exec to inspect and change "
          "things, check each result, and answer briefly when the task is done.")
HERE, HOME = os.path.dirname(os.path.abspath(__file__)), os.path.expanduser('~')
SESSIONS, HISTORY = os.path.join(HOME, '.bantam', 'sessions'), os.path.join(HOME, '.bantam_history')
SHELL = '/bin/bash' if os.path.exists('/bin/bash') else None  # models write bash
STYLES = {'status': '1;90', 'marker': '36', 'think': '2', 'call': '33', 'result': '32',
          'body': '2', 'error': '31'}


class Fail(Exception):  # an error that ends the turn with a one-line explanation
    pass


def read_text(path):
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Fail('cannot read %s: %s' % (path, getattr(e, 'strerror', None) or e))


def find(name):  # a file in the current directory, else beside the script
    paths = [os.path.join(folder, name) for folder in (os.getcwd(), HERE)]
    return next((path for path in paths if os.path.isfile(path)), None)


def load_config():
    # Built-in defaults < model.cfg < BANTAM_<KEY>; a value is parsed as its default's type.
    cfg, path = dict(DEFAULTS), find('model.cfg')
    lines = read_text(path).splitlines() if path else []
    lines += ['%s=%s' % (k[7:].lower(), v) for k, v in os.environ.items()
              if k[:7] == 'BANTAM_' and k[7:].lower() in DEFAULTS]
    if os.environ.get('NO_COLOR') or os.environ.get('BANTAM_NO_COLOR'):
        lines.append('color=never')
    for key, _, value in (map(str.strip, line.partition('=')) for line in lines):
        if key and key[0] != '#':
            try:
                kind = type(DEFAULTS[key])
                cfg[key] = BOOLS[value.lower()] if kind is bool else kind(value)
            except (KeyError, ValueError):
                raise Fail('bad setting %r (bantam.py --help lists them)' % key.split()[0])
    cfg['api_key'] = cfg['api_key'] or os.environ.get('OPENAI_API_KEY', '')
    if not cfg['endpoint'].startswith(('http://', 'https://')):
        raise Fail('the endpoint must start with http:// or https://')
    cfg['system'] = read_text(find('system.txt')).strip() if find('system.txt') else SYSTEM
    return cfg


def say(cfg, text, style='', out=sys.stderr, end='\n'):  # the model's words go to stdout
    if style and (cfg['color'] == 'always' or cfg['color'] == 'auto' and out.isatty()):
        text = '\033[%sm%s\033[0m' % (STYLES[style], text)
    out.write('%s%s' % (text, end))
    out.flush()


def hide_key(cfg, text):
    return text.replace(cfg['api_key'], '[api key]') if cfg['api_key'] else text


def parse_json(text):  # a JSON object, or {} for anything else
    with contextlib.suppress(ValueError):
        value = json.loads(text)
        return value if isinstance(value, dict) else {}
    return {}


# ---------------------------------------------------------------- chat client
def chat(cfg, messages, tools):
    # Send the conversation, retry on the Fibonacci schedule; return (reply, usage, finish).
    body = {'model': cfg['model'], 'temperature': cfg['temperature'], 'messages': messages,
            'stream': cfg['stream']}
    body.update((key, value) for key, value in [
        ('tools', [schema(name) for name in tools]), ('reasoning_effort', cfg['reasoning_effort']),
        ('stream_options', cfg['stream'] and cfg['include_usage'] and {'include_usage': True})]
        if value)
    headers = {'Content-Type': 'application/json',
               'User-Agent': 'Mozilla/5.0 (compatible; Bantam/1.0)'}
    if cfg['api_key']:
        headers['Authorization'] = 'Bearer ' + cfg['api_key']
    url = cfg['endpoint'].rstrip('/') + '/chat/completions'
    for delay in (1, 1, 2, 3, 5, None):
        try:
            request = urllib.request.Request(url, json.dumps(body).encode(), headers)
            with urllib.request.urlopen(request, timeout=cfg['timeout']) as response:
                return read_reply(cfg, response)
        except (OSError, http.client.HTTPException) as e:
            why, after = failure(cfg, body, e)
        if delay is None:
            raise Fail('%s (gave up after 5 retries)' % why)
        say(cfg, '%s; retrying in %d s' % (why, max(delay, after)), 'error')
        time.sleep(max(delay, after))


def failure(cfg, body, e):
    # Return (why, Retry-After) when a failure is worth a retry; raise Fail when it is not.
    if not isinstance(e, urllib.error.HTTPError):
        return 'network error: %s' % (getattr(e, 'reason', None) or e), 0
    text, after = e.read().decode('utf-8', 'replace'), e.headers.get('Retry-After', '')
    after = int(after) if after.isdigit() else 0
    why = explain(cfg, 'HTTP %d' % e.code, parse_json(text).get('error') or text[:500])
    if e.code == 400 and 'stream_options' in text and body.pop('stream_options', None):
        cfg['include_usage'] = False  # this server rejects usage reports: go on without
    elif after > 60 or 'insufficient_quota' in text or e.code < 500 and e.code not in RETRY:
        raise Fail(why)
    return why, after


RETRY = (408, 409, 425, 429)  # and every 5xx


def explain(cfg, status, error):  # the status, the server's own message, and a hint
    if isinstance(error, dict):
        error = error.get('message') or json.dumps(error)
    if re.search(r'context.{0,12}(length|size|window)', str(error), re.I):
        error = '%s (the conversation is too long for the model: try /compact)' % error
    return hide_key(cfg, '%s: %s' % (status, error))


def events(response):
    # The JSON object of each "data:" line of a server-sent event stream, up to [DONE];
    # a plain JSON body is read as a one-line stream (JSON keeps no raw newline in a string).
    lines = response
    if 'json' in response.headers.get('Content-Type', ''):
        lines = [b'data: ' + b' '.join(response.read().splitlines()), b'data: [DONE]']
    for line in lines:
        field, _, value = line.decode('utf-8', 'replace').partition(':')
        if field == 'data' and value.strip() == '[DONE]':
            yield {'choices': [{'finish_reason': 'stop'}]}  # complete, even without one
            return
        if field in ('data', 'error'):  # old llama.cpp sends errors in an "error:" field
            yield parse_json(value) if field == 'data' else {'error': parse_json(value)}


def read_reply(cfg, response):
    # Read a reply as it arrives and print its words live; return (message, usage, finish).
    r = {'text': '', 'calls': {}, 'usage': None, 'finish': None, 'mode': 'text', 'think': False}
    try:
        for chunk in events(response):
            if chunk.get('error'):
                raise Fail(explain(cfg, 'server error', chunk['error']))
            r['usage'] = chunk.get('usage') or r['usage']
            for choice in [c for c in chunk.get('choices') or [] if c.get('index', 0) == 0]:
                r['finish'] = r['finish'] or choice.get('finish_reason')
                read_delta(cfg, r, choice.get('delta') or choice.get('message') or {})
    finally:  # end the reasoning block, or the last line
        if r['mode'] == 'reasoning' or r['text'][-1:] not in ('', '\n'):
            say(cfg, '\n--- reasoning end ---' * (r['mode'] == 'reasoning'), 'marker', sys.stdout)
    if not r['finish']:
        raise ConnectionError('the reply stream ended early')
    reply = {'role': 'assistant', 'content': r['text'], 'tool_calls': list(r['calls'].values())}
    return {k: v for k, v in reply.items() if v or k == 'content'}, r['usage'], r['finish']


THINK = re.compile(r'(</?think>|</?thought>)')


def read_delta(cfg, r, delta):  # show its reasoning and its text; gather its tool calls
    details = [d.get('text') or '' for d in delta.get('reasoning_details') or []]
    thought = (delta.get('reasoning_content') or delta.get('reasoning')
               or delta.get('reasoning_text') or ''.join(details))
    content = delta.get('content')
    parts = content if isinstance(content, list) else [content, delta.get('refusal')]
    thought = thought if isinstance(thought, str) else ''
    for part in [{'type': 'thinking', 'thinking': [{'text': thought}]}] + parts:
        if isinstance(part, dict) and part.get('type') == 'thinking':  # Mistral's parts too
            show(cfg, r, 'reasoning', ''.join(t.get('text') or '' for t in part['thinking']))
        text = part.get('text') if isinstance(part, dict) else part
        for piece in THINK.split(text) if isinstance(text, str) else []:
            if THINK.match(piece):  # inline <think> markup is reasoning too
                r['think'] = piece[1] != '/'
            elif not (r['think'] and thought):  # unless it copies the reasoning (MiniMax)
                show(cfg, r, 'reasoning' if r['think'] else 'text', piece)
    for fragment in delta.get('tool_calls') or []:
        add_fragment(r['calls'], fragment)


def show(cfg, r, mode, piece):  # print a piece of the reply, with markers around reasoning
    if isinstance(piece, str) and piece:
        if mode != r['mode']:
            say(cfg, '--- reasoning start ---' if mode == 'reasoning' else
                '\n--- reasoning end ---', 'marker', sys.stdout)
        r['mode'], r['text'] = mode, r['text'] + (piece if mode == 'text' else '')
        say(cfg, piece, 'think' if mode == 'reasoning' else '', sys.stdout, '')


def add_fragment(calls, fragment):  # by index; without one, a fragment with an id is a new call
    key = fragment.get('index', len(calls) - (0 if fragment.get('id') else 1))
    call = calls.setdefault(key, {'id': 'call_%s' % os.urandom(6).hex(), 'type': 'function',
                                  'function': {'name': '', 'arguments': ''}})
    function, part = call['function'], fragment.get('function') or {}
    call['id'] = fragment.get('id') or call['id']  # some servers send none
    function['name'] = function['name'] or part.get('name') or ''  # some repeat it each time
    args = part.get('arguments') or ''
    function['arguments'] += args if isinstance(args, str) else json.dumps(args)


# ---------------------------------------------------------------- tools
def clean(cfg, text):  # drop invisible and direction-changing characters, and the API key
    text = ''.join(c for c in text if c in '\t\n' or unicodedata.category(c) not in ('Cc', 'Cf'))
    return hide_key(cfg, text)


def clip(f, limit):  # a file's text; past limit bytes, only its head and its tail
    size, half = f.seek(0, 2), limit // 2
    f.seek(0)
    if size <= limit:
        return f.read().decode('utf-8', 'replace')
    head, _, tail = f.read(half), f.seek(size - half), f.read(half)
    gap = '\n\n[... %d bytes left out: see them with head, tail or grep ...]\n\n' % (size - 2 * half)
    return (head + gap.encode() + tail).decode('utf-8', 'replace')


def shell_exec(cfg, command):
    # Output goes to a file, not a pipe, so a background child cannot hold the call open.
    import tempfile  # lazy: start-up time
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(command, shell=True, executable=SHELL, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, start_new_session=True,
                                env=dict(os.environ, PAGER='cat', GIT_PAGER='cat', TQDM_DISABLE='1'))
        try:
            code = proc.wait(cfg['shell_timeout'])
        except subprocess.TimeoutExpired:
            code = 'killed after the %d s shell_timeout' % cfg['shell_timeout']
        finally:
            if proc.returncode is None:  # timeout or Ctrl+C: kill the whole process group
                os.killpg(proc.pid, signal.SIGKILL)
        output = clip(out, cfg['max_tool_res'] - 200)
    return clean(cfg, output or '(no output)') + '\n\nexit: %s' % code


def run_subagent(cfg, prompt):  # a fresh child conversation through the same loop
    child = [{'role': 'system', 'content': cfg['system'] + '\n\nImportant: this is a child agent'},
             {'role': 'user', 'content': prompt}]
    try:
        agent_loop(cfg, child, ['shell_exec'])  # no run_subagent: a child cannot fork forever
    except Fail as e:
        return 'error: the child agent failed: %s' % e
    answer = child[-1]['content'] if child[-1]['role'] == 'assistant' else ''
    return clean(cfg, clip(io.BytesIO(answer.encode()), cfg['max_tool_res'])) or '(no answer)'


TOOLS = {'shell_exec': ('command', shell_exec, 'Run a bash command in the current directory. '
                        'Returns its output (stdout and stderr) and exit code.'),
         'run_subagent': ('prompt', run_subagent, 'Give a large, self-contained task to a child '
                          'agent that has a shell. Returns its final answer.')}


def schema(name):
    param, _, about = TOOLS[name]
    return {'type': 'function', 'function': {'name': name, 'description': about, 'parameters': {
        'type': 'object', 'properties': {param: {'type': 'string'}}, 'required': [param]}}}


def run_tool(cfg, call, tools):  # check a call, trace it, run it; return the result
    name, raw = call['function']['name'], clean(cfg, call['function']['arguments'] or '{}')
    say(cfg, '[tool call: %s(%s)]' % (name, raw), 'call')
    param, tool, _ = TOOLS[name] if name in tools else ('', None, '')
    arg = parse_json(raw).get(param)
    arg = clean(cfg, arg) if isinstance(arg, str) else arg  # escaped characters too
    why = 'no %s argument as a JSON string' % param if tool else 'there is no tool %r' % name
    result = tool(cfg, arg) if isinstance(arg, str) else 'error: %s; the tools are %s' % (
        why, ', '.join('%s({"%s": "..."})' % (t, TOOLS[t][0]) for t in tools))
    say(cfg, '[tool result: %s]' % name, 'result')
    say(cfg, result, 'body' if isinstance(arg, str) else 'error')
    return result


# ---------------------------------------------------------------- agentic loop
INTERRUPTED = 'error: interrupted by the user before it finished'
REPEATED = ('\n\nNote: this call repeats your previous call exactly. If you have what you need, '
            'answer the user now; otherwise try something different.')


def agent_loop(cfg, messages, tools):
    # Ask the model, run the tools it calls, and ask again, until it calls none.
    for _ in range(cfg['max_al_iterations']):
        say(cfg, '...requesting...', 'status')
        reply, usage, finish = chat(cfg, messages, tools)
        calls = reply.get('tool_calls')
        if finish == 'length' or not (reply['content'] or calls):
            say(cfg, '[the reply is %s]' % ('cut by the token limit' if finish == 'length'
                                            else 'empty'), 'error')
        messages += [reply] if reply['content'] or calls else []
        if not calls:
            return usage
        answers = [{'role': 'tool', 'tool_call_id': c['id'], 'content': INTERRUPTED} for c in calls]
        messages += answers  # answered in advance: an interruption leaves a valid conversation
        seen = [c['function'] for m in messages for c in m.get('tool_calls') or []]
        for k, call, answer in zip(range(len(seen) - len(calls), len(seen)), calls, answers):
            note = REPEATED if k and seen[k] == seen[k - 1] else ''
            answer['content'] = run_tool(cfg, call, tools) + note
    say(cfg, '[stopped after max_al_iterations=%d requests]' % cfg['max_al_iterations'], 'error')


def turn(cfg, messages, prompt):  # one user prompt, then a line of token usage
    messages.append({'role': 'user', 'content': prompt})
    usage = agent_loop(cfg, messages, list(TOOLS))
    if usage:
        tokens, window = usage.get('prompt_tokens') or 0, cfg['context_window']
        cached = (usage.get('prompt_tokens_details') or {}).get('cached_tokens')
        say(cfg, '[%d prompt tokens%s + %d completion%s]' % (
            tokens, '' if cached is None else ' (%d cached, %d uncached)' % (cached, tokens - cached),
            usage.get('completion_tokens') or 0,
            ' | context %.1f%% of %d' % (100.0 * tokens / window, window) if window else ''), 'body')


# ---------------------------------------------------------------- sessions
def save_session(messages, sid, summary):
    # Atomically (a temporary file, then a rename), readable by the owner only.
    path = os.path.join(SESSIONS, sid + '.json')
    try:
        os.makedirs(SESSIONS, 0o700, exist_ok=True)
        with open(os.open(path + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
            json.dump({'id': sid, 'time': time.strftime('%Y-%m-%d %H:%M:%S'),
                       'summary': summary, 'messages': messages}, f)
        os.replace(path + '.tmp', path)
    except OSError as e:
        raise Fail('cannot save session %s: %s' % (sid, e))


def sessions():  # {id: path}, newest first
    paths = sorted(glob.glob(os.path.join(SESSIONS, '*.json')), key=os.path.getmtime)
    return {os.path.basename(path)[:-5]: path for path in reversed(paths)}


def summarize(cfg, messages, ask):
    return chat(cfg, messages + [{'role': 'user', 'content': ask}], [])[0]['content'].strip()


# ---------------------------------------------------------------- REPL
def cmd_save(cfg, messages, arg):
    "save the conversation as a new session, with a summary"
    sid = time.strftime('%Y%m%d-%H%M%S')
    save_session(messages, sid, summarize(cfg, messages, 'Summarize our conversation in a line.'))
    say(cfg, 'saved session %s' % sid)


def cmd_list(cfg, messages, arg):
    "list saved sessions, newest first"
    for sid, path in sessions().items():
        data = parse_json(read_text(path))
        say(cfg, '%s  %s  %3d messages  %s' % (sid, data.get('time'), len(
            data.get('messages') or []), data.get('summary', '(unreadable)')))


def cmd_load(cfg, messages, arg):
    "load a session by its id or a unique prefix of it"
    ids = sessions()
    found = [i for i in ids if i == arg] or [i for i in ids if i.startswith(arg)]
    if len(found) != 1:
        raise Fail('%d sessions match %r %s' % (len(found), arg, ' '.join(found)))
    loaded = parse_json(read_text(ids[found[0]])).get('messages')
    if not (loaded and all(isinstance(m, dict) and 'role' in m for m in loaded)):
        raise Fail('session %s is unreadable; the conversation is unchanged' % found[0])
    messages[:] = loaded


def cmd_compact(cfg, messages, arg):
    "replace the conversation with a summary of it"
    summary = summarize(cfg, messages, 'Summarize our conversation for yourself: the task, '
                        'what was done and learned, and what remains.')
    messages[1:] = [{'role': 'user', 'content': 'Summary of our work so far:\n' + summary}]


def cmd_clear(cfg, messages, arg):
    "start a new conversation"
    messages[:] = [{'role': 'system', 'content': cfg['system']}]


def cmd_quit(cfg, messages, arg):
    "leave Bantam (Ctrl+D too)"
    raise EOFError


def cmd_help(cfg, messages, arg):
    "show this help"
    say(cfg, '\n'.join(['%-9s %s' % (name, f.__doc__) for name, f in COMMANDS.items()] + [
        '!command  run a shell command outside the conversation',
        'Ctrl+J adds a line, Enter sends, Ctrl+C stops a turn.']), out=sys.stdout)


COMMANDS = {'/' + name[4:]: f for name, f in list(globals().items()) if name.startswith('cmd_')}


def repl(cfg, messages):  # read and run prompts; autosave whenever the conversation changes
    with contextlib.suppress(ImportError, OSError):
        import readline  # lazy: only the REPL edits lines
        readline.parse_and_bind(r'"\C-j": "\C-v\C-j"')  # Ctrl+J inserts a newline
        readline.read_history_file(HISTORY)
    saved = json.dumps(messages)
    while True:
        line = None
        try:
            if json.dumps(messages) != saved:  # after every turn, whatever its end
                saved = json.dumps(messages)
                save_session(messages, 'autosave', '(autosave)')
            line = input('> ').strip()
            if line.startswith('!'):
                subprocess.call(line[1:], shell=True, executable=SHELL)
            elif line.startswith('/'):  # an unknown command shows the help
                COMMANDS.get(line.split()[0], cmd_help)(cfg, messages, line.partition(' ')[2])
            elif line:
                turn(cfg, messages, line)
        except EOFError:
            break
        except KeyboardInterrupt:  # at the prompt: a fresh line, as in bash
            say(cfg, '' if line is None else '[interrupted]', 'error')
        except Exception as e:  # no traceback ever: one line, and the REPL goes on
            say(cfg, e if isinstance(e, Fail) else repr(e), 'error')
    with contextlib.suppress(NameError, OSError):
        readline.write_history_file(HISTORY)


# ---------------------------------------------------------------- main
def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `bantam.py p.txt | head` ends quietly
    if argv[1:2] in (['-h'], ['--help']):
        keys = ['  %-18s %s' % (key, json.dumps(value)) for key, value in DEFAULTS.items()]
        print('\n'.join(['usage: bantam.py [prompt.txt | -]   (no argument: the REPL)',
                         'Settings in model.cfg (or BANTAM_<KEY>), with defaults:'] + keys))
        return cmd_help({'color': 'never'}, [], '') or 0
    try:
        cfg = load_config()
        messages = [{'role': 'system', 'content': cfg['system']}]
        if len(argv) < 2:
            return repl(cfg, messages) or 0
        stdin = argv[1] == '-'
        turn(cfg, messages, sys.stdin.read() if stdin else read_text(argv[1]))
        return 0
    except Exception as e:  # no traceback ever: one line
        print('bantam: %s' % (e if isinstance(e, Fail) else repr(e)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('\nbantam: interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main(sys.argv))
