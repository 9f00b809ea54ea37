#!/usr/bin/env python3
# Bantam: a tiny agent that gives an OpenAI-compatible model two tools, a shell and itself.
# Usage: bantam.py [prompt.txt | -]   (no argument: the REPL; -h: help)
# The file reads in the order of the README's algorithm: configuration, chat client, tools,
# agentic loop, sessions, REPL, main.
import contextlib, glob, http.client, io, json, os, re, signal, subprocess, sys, tempfile, time
import unicodedata, urllib.error, urllib.request

# ---------------------------------------------------------------- configuration
DEFAULTS = {'endpoint': 'https://api.openai.com/v1', 'model': 'gpt-4o', 'temperature': 0.7,
            'api_key': '', 'stream': True, 'color': 'auto', 'timeout': 60, 'shell_timeout': 120,
            'max_al_iterations': 1000, 'max_tool_res': 32768, 'reasoning_effort': ''}
SYSTEM = 'You are a terminal agent: act with shell_exec, check results, then answer briefly.'
HERE, HOME = os.path.dirname(os.path.abspath(__file__)), os.path.expanduser('~')
SESSIONS, HISTORY = os.path.join(HOME, '.bantam', 'sessions'), os.path.join(HOME, '.bantam_history')
SHELL = '/bin/bash' if os.path.exists('/bin/bash') else None  # models write bash
RETRY = (408, 409, 425, 429)  # and every 5xx: worth another try
STYLES = dict(status='1;90', marker='36', think='2', call='33', result='32', body='2', error='31')


Fail = RuntimeError  # an error that ends the turn with a one-line explanation


def read_text(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def find(name):  # a file in the current directory, else beside the script
    return next(filter(os.path.isfile, [os.path.join(d, name) for d in (os.getcwd(), HERE)]), None)


def load_config():
    # Built-in defaults < model.cfg < BANTAM_<KEY>; a value is parsed as its default's type.
    cfg, path = dict(DEFAULTS), find('model.cfg')
    lines = read_text(path).splitlines() if path else []
    lines += ['%s=%s' % (k[7:].lower(), v) for k, v in os.environ.items()
              if k[:7] == 'BANTAM_' and k[7:].lower() in DEFAULTS]
    lines += ['color=never'] if os.getenv('NO_COLOR') or os.getenv('BANTAM_NO_COLOR') else []
    for key, _, value in (map(str.strip, line.partition('=')) for line in lines):
        if key and key[0] != '#':
            try:
                kind = type(DEFAULTS[key])
                cfg[key] = {'true': True, 'false': False}[value] if kind is bool else kind(value)
            except (KeyError, ValueError):
                raise Fail('bad setting %r (bantam.py --help lists them)' % key.split()[0])
    if not cfg['endpoint'].startswith(('http://', 'https://')):
        raise Fail('the endpoint must start with http:// or https://')
    cfg['api_key'] = cfg['api_key'] or os.environ.get('OPENAI_API_KEY', '')
    cfg['system'] = read_text(find('system.txt')).strip() if find('system.txt') else SYSTEM
    return cfg


def say(cfg, text, style='', out=sys.stderr, end='\n'):  # the model's words go to stdout
    if style and (cfg['color'] == 'always' or cfg['color'] == 'auto' and out.isatty()):
        text = '\033[%sm%s\033[0m' % (STYLES[style], text)
    out.write('%s%s' % (text, end))
    out.flush()


def parse_json(text):  # a JSON object, or {} for anything else
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- chat client
def chat(cfg, messages, tools):
    # Send the conversation, retry on the Fibonacci schedule; return (reply, finish).
    body = {'tools': [SCHEMAS[name] for name in tools], 'reasoning_effort': cfg['reasoning_effort']}
    body = dict({k: v for k, v in body.items() if v}, model=cfg['model'], messages=messages,
                temperature=cfg['temperature'], stream=cfg['stream'])
    headers = {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + cfg['api_key'],
               'User-Agent': 'Mozilla/5.0 (compatible; Bantam/1.0)'}
    headers = {k: v for k, v in headers.items() if cfg['api_key'] or k != 'Authorization'}
    url = cfg['endpoint'].rstrip('/') + '/chat/completions'
    for delay in (1, 1, 2, 3, 5, None):
        try:
            request = urllib.request.Request(url, json.dumps(body).encode(), headers)
            with urllib.request.urlopen(request, timeout=cfg['timeout']) as response:
                return read_reply(cfg, response)
        except (OSError, http.client.HTTPException) as e:
            why, after = failure(cfg, e)
        if delay is None: raise Fail('%s (gave up after 5 retries)' % why)
        say(cfg, '%s; retrying in %d s' % (why, max(delay, after)), 'error')
        time.sleep(max(delay, after))


def failure(cfg, e):
    # Return (why, Retry-After) when a failure is worth a retry; raise Fail when it is not.
    if not isinstance(e, urllib.error.HTTPError):
        return 'network error: %s' % (getattr(e, 'reason', None) or e), 0
    text, after = e.read().decode('utf-8', 'replace'), e.headers.get('Retry-After', '')
    after = int(after) if after.isdigit() else 0
    why = explain(cfg, 'HTTP %d' % e.code, parse_json(text).get('error') or text[:500])
    if after > 60 or 'insufficient_quota' in text or e.code < 500 and e.code not in RETRY:
        raise Fail(why)
    return why, after


def explain(cfg, status, error):  # the status, the server's own message, and a hint
    error = error.get('message') or json.dumps(error) if isinstance(error, dict) else error
    hint = re.search(r'context.{0,12}(length|size|window)', str(error), re.I)
    return clean(cfg, '%s: %s%s' % (status, error, ' (too long for the model: try /compact)'
                                    if hint else ''))


def events(response):
    # The JSON object of each "data:" line of a server-sent event stream, up to [DONE];
    # a plain JSON body is read as a one-line stream (JSON keeps no raw newline in a string).
    lines = [b'data: ' + b' '.join(response.read().splitlines()), b'data: [DONE]'] if 'json' in \
        response.headers.get('Content-Type', '') else response
    for line in lines:
        field, _, value = line.decode('utf-8', 'replace').partition(':')
        if field == 'data' and value.strip() == '[DONE]':
            yield {'choices': [{'finish_reason': 'stop'}]}  # complete, even without one
            return
        if field in ('data', 'error'):  # old llama.cpp sends errors in an "error:" field
            yield parse_json(value) if field == 'data' else {'error': parse_json(value)}


def read_reply(cfg, response):
    # Read a reply as it arrives and print its words live; return (message, finish).
    r = {'text': [], 'calls': {}, 'finish': None, 'mode': 'text'}
    try:
        for chunk in events(response):
            if chunk.get('error'):
                raise Fail(explain(cfg, 'server error', chunk['error']))
            for choice in [c for c in chunk.get('choices') or [] if c.get('index', 0) == 0]:
                r['finish'] = r['finish'] or choice.get('finish_reason')
                read_delta(cfg, r, choice.get('delta') or choice.get('message') or {})
    finally:  # end the reasoning block, or the last line
        if r['mode'] == 'reasoning' or r['text'] and not r['text'][-1].endswith('\n'):
            say(cfg, '\n--- reasoning end ---' if r['mode'] == 'reasoning' else '', out=sys.stdout)
    if not r['finish']:
        raise ConnectionError('the reply stream ended early')
    reply = {'role': 'assistant', 'content': ''.join(r['text'])}
    calls = list(r['calls'].values())
    return (dict(reply, tool_calls=calls) if calls else reply), r['finish']


def read_delta(cfg, r, delta):  # show its reasoning and its text; gather its tool calls
    thought = (delta.get('reasoning_content') or delta.get('reasoning')
               or delta.get('reasoning_text'))
    if thought or delta.get('reasoning_details'):
        show(cfg, r, 'reasoning', thought if isinstance(thought, str) else ''.join(
            d.get('text') or '' for d in delta.get('reasoning_details') or []))
    content = delta.get('content')
    for part in content if isinstance(content, list) else (content, delta.get('refusal')):
        if isinstance(part, dict) and part.get('type') == 'thinking':  # Mistral
            show(cfg, r, 'reasoning', ''.join(t.get('text') or '' for t in part['thinking']))
        text = part.get('text') if isinstance(part, dict) else part
        show(cfg, r, 'text', text if isinstance(text, str) else '')
    for fragment in delta.get('tool_calls') or []:
        add_fragment(r['calls'], fragment)


def show(cfg, r, mode, piece):  # print a piece of the reply, with markers around reasoning
    if not piece: return
    if mode != r['mode']:
        say(cfg, '--- reasoning start ---' if mode == 'reasoning' else '\n--- reasoning end ---',
            'marker', sys.stdout)
    r['mode'] = mode
    r['text'] += [piece] if mode == 'text' else []  # extends in place; reasoning is not kept
    say(cfg, piece, 'think' if mode == 'reasoning' else '', sys.stdout, '')


def add_fragment(calls, fragment):  # by index; without one, a fragment with an id is a new call
    key = fragment.get('index', len(calls) - (0 if fragment.get('id') else 1))
    call = calls.setdefault(key, {'id': 'call_%s' % os.urandom(6).hex(), 'type': 'function',
                                  'function': {'name': '', 'arguments': ''}})
    function, part = call['function'], fragment.get('function') or {}
    call['id'] = fragment.get('id') or call['id']  # some servers send none
    function['name'] = function['name'] or part.get('name') or ''  # some repeat it each time
    function['arguments'] += part.get('arguments') or ''


# ---------------------------------------------------------------- tools
def clean(cfg, text):  # drop invisible and direction-changing characters, and the API key
    text = ''.join(c for c in text if c in '\t\n' or unicodedata.category(c) not in ('Cc', 'Cf'))
    return text.replace(cfg['api_key'], '[api key]') if cfg['api_key'] else text


def clip(f, limit):  # a file's text; past limit bytes, only its head and its tail
    size, half, limit = f.seek(0, 2), limit // 2, limit // 2 * 2
    f.seek(0)
    if size <= limit: return f.read().decode('utf-8', 'replace')
    head, _, tail = f.read(half), f.seek(size - half), f.read(half)
    gap = '\n\n[... %d bytes left out: see them with head, tail or grep ...]\n\n' % (size - limit)
    return (head + gap.encode() + tail).decode('utf-8', 'replace')


def shell_exec(cfg, command):
    # Output goes to a file, not a pipe, so a background child cannot hold the call open.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(command, shell=True, executable=SHELL, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, start_new_session=True)
        try:
            code = proc.wait(cfg['shell_timeout'])
        except subprocess.TimeoutExpired:
            code = 'killed after the %d s shell_timeout' % cfg['shell_timeout']
        finally:
            if proc.returncode is None:  # timeout or Ctrl+C: kill the whole process group
                os.killpg(proc.pid, signal.SIGKILL)
        output = clip(out, cfg['max_tool_res'] - 200) or '(no output)'
    return clean(cfg, output) + '\n\nexit: %s' % code


def run_subagent(cfg, prompt):  # a fresh child conversation through the same loop
    child = [{'role': 'system', 'content': cfg['system'] + '\n\nImportant: this is a child agent'}]
    agent_loop(cfg, child, prompt, ['shell_exec'])  # no run_subagent: a child cannot fork forever
    answer = child[-1]['content'] if child[-1]['role'] == 'assistant' else ''
    return clean(cfg, clip(io.BytesIO(answer.encode()), cfg['max_tool_res'])) or '(no answer)'


# Small models heed a tool's description more than the system prompt: it carries the key habit.
TOOLS = {'shell_exec': ('command', shell_exec, 'Run a bash command; returns output and exit code. '
                        'To save a result, the same command writes it: cmd > file; cat file'),
         'run_subagent': ('prompt', run_subagent, 'Only for a big multi-step task: a child agent.')}


SCHEMAS = {name: {'type': 'function', 'function': {'name': name, 'description': about,
           'parameters': {'type': 'object', 'properties': {param: {'type': 'string'}},
                          'required': [param]}}} for name, (param, _, about) in TOOLS.items()}


def run_tool(cfg, call, tools):  # check a call, trace it, run it; return the result
    name, raw = call['function']['name'], clean(cfg, call['function']['arguments'] or '{}')
    say(cfg, '[tool call: %s(%s)]' % (name, raw), 'call')
    param, tool, _ = TOOLS[name] if name in tools else ('', None, '')
    arg = parse_json(raw).get(param)
    why = 'no %s argument as a JSON string' % param if tool else 'there is no tool %r' % name
    usage = ', '.join('%s({"%s": "..."})' % (t, TOOLS[t][0]) for t in tools)
    ok = tool and isinstance(arg, str)
    result = tool(cfg, clean(cfg, arg)) if ok else 'error: %s; use %s' % (why, usage)
    say(cfg, '[tool result: %s]' % name, 'result')
    say(cfg, result, 'body' if ok else 'error')
    return result


# ---------------------------------------------------------------- agentic loop
INTERRUPTED = 'error: this call did not finish (interrupted, or its child agent failed)'
REPEATED = '\n\nNote: this exact call already gave this result. Answer now, or try something else.'


def rounds(messages):  # (call, result) of each tool call in these messages, without notes
    return [(c['function'], r['content'].split(REPEATED)[0]) for i, m in enumerate(messages)
            for c, r in zip(m.get('tool_calls') or [], messages[i + 1:])]  # results come next


def agent_loop(cfg, messages, prompt, tools):
    # One turn: add the prompt, then ask the model and run the tools it calls, until it calls none.
    start = len(messages)  # repeats count within this turn only
    messages.append({'role': 'user', 'content': prompt})
    for _ in range(cfg['max_al_iterations']):
        done = rounds(messages[start:])
        stuck = done and done.count(done[-1]) > 2  # a third time: now it must answer in words
        say(cfg, '...requesting...', 'status')
        reply, finish = chat(cfg, messages, [] if stuck else tools)
        calls = reply.get('tool_calls')
        if finish == 'length':
            say(cfg, '[the reply was cut off by the token limit]', 'error')
        messages += [reply] if reply['content'] or calls else []
        if not calls: return
        answers = [{'role': 'tool', 'tool_call_id': c['id'], 'content': INTERRUPTED} for c in calls]
        messages += answers  # answered in advance: an interruption leaves a valid conversation
        for call, answer in zip(calls, answers):
            done.append((call['function'], run_tool(cfg, call, tools)))
            answer['content'] = done[-1][1] + (REPEATED if done[-1] in done[:-1] else '')
    say(cfg, '[stopped after max_al_iterations=%d requests]' % cfg['max_al_iterations'], 'error')


# ---------------------------------------------------------------- sessions
def save_session(messages, sid, summary):
    # Atomically (a temporary file, then a rename), readable by the owner only.
    path = os.path.join(SESSIONS, sid + '.json')
    os.makedirs(SESSIONS, 0o700, exist_ok=True)
    with open(os.open(path + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
        json.dump({'time': time.strftime('%F %T'), 'summary': summary, 'messages': messages}, f)
    os.replace(path + '.tmp', path)


def sessions():  # {id: path}, newest first
    paths = sorted(glob.glob(os.path.join(SESSIONS, '*.json')), key=os.path.getmtime)
    return {os.path.basename(path)[:-5]: path for path in reversed(paths)}


def load_session(prefix):  # by its exact id or a unique prefix of it
    ids = sessions()
    found = [i for i in ids if i == prefix] or [i for i in ids if i.startswith(prefix)]
    if len(found) != 1:
        raise Fail('%d sessions match %r %s' % (len(found), prefix, ' '.join(found)))
    loaded = parse_json(read_text(ids[found[0]])).get('messages')
    if not (loaded and all(isinstance(m, dict) and 'role' in m for m in loaded)):
        raise Fail('session %s is unreadable; the conversation is unchanged' % found[0])
    return loaded


def summarize(cfg, messages, ask):  # refuses an empty summary: it must never replace anything
    summary = chat(cfg, messages + [{'role': 'user', 'content': ask}], [])[0]['content'].strip()
    if not summary: raise Fail('the model gave no summary; nothing was changed')
    return summary


# ---------------------------------------------------------------- REPL
HELP = '/save /list /load <id or prefix> /compact /clear /help /quit; Ctrl+J adds a line'


def command(cfg, messages, word, arg):  # a REPL command; an unknown one shows the help
    if word == '/save':
        sid = time.strftime('%Y%m%d-%H%M%S')
        save_session(messages, sid, summarize(cfg, messages, 'Summarize our talk in one line.'))
        say(cfg, 'saved session %s' % sid)
    elif word == '/list':
        found = [(sid, parse_json(read_text(path))) for sid, path in sessions().items()]
        say(cfg, '\n'.join('%s  %s  %3d messages  %s' % (sid, s.get('time'), len(s.get(
            'messages') or []), s.get('summary', '(unreadable)')) for sid, s in found)
            or 'no saved sessions')
    elif word == '/load':
        messages[:] = load_session(arg)
    elif word == '/compact':
        summary = summarize(cfg, messages, 'Summarize our work so far for yourself: the task, '
                            'what was done and learned, and what remains.')
        messages[1:] = [{'role': 'user', 'content': 'Summary of our work so far:\n' + summary}]
    elif word == '/clear':
        messages[:] = [{'role': 'system', 'content': cfg['system']}]
    elif word == '/quit':
        raise EOFError
    else:
        say(cfg, HELP, out=sys.stdout)


def repl(cfg, messages):  # read and run prompts; autosave whenever the conversation changes
    with contextlib.suppress(ImportError, OSError):
        import readline  # lazy: only the REPL edits lines
        readline.parse_and_bind(r'"\C-j": "\C-v\C-j"')  # Ctrl+J inserts a newline
        readline.read_history_file(HISTORY)
    saved = json.dumps(messages)
    while True:
        line = None
        try:
            saved, before = json.dumps(messages), saved
            if saved != before:  # after every turn, however it ended
                save_session(messages, 'autosave', '(autosave)')
            line = input('> ').strip()
            if line.startswith('/'):
                command(cfg, messages, *line.partition(' ')[::2])
            elif line:
                agent_loop(cfg, messages, line, list(TOOLS))
        except EOFError:
            break
        except KeyboardInterrupt:  # at the prompt: a fresh line, as in bash
            say(cfg, '' if line is None else '[interrupted]', 'error')
        except Exception as e:  # no traceback ever: one line, and the REPL goes on
            say(cfg, e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e), 'error')
    with contextlib.suppress(NameError, OSError):
        readline.write_history_file(HISTORY)


# ---------------------------------------------------------------- main
def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `bantam.py p.txt | head` ends quietly
    if argv[1:2] in (['-h'], ['--help']):
        print('usage: bantam.py [prompt.txt | -]   (no argument: the REPL)\nSettings in model.cfg '
              '(or BANTAM_<KEY>) with their defaults:' + ''.join('\n  %-18s %s' % (key, json.dumps(
                  value)) for key, value in DEFAULTS.items()) + '\n' + HELP)
        return 0
    try:
        cfg = load_config()
        messages = [{'role': 'system', 'content': cfg['system']}]
        if len(argv) < 2:
            return repl(cfg, messages) or 0
        agent_loop(cfg, messages, sys.stdin.read() if argv[1] == '-' else read_text(argv[1]),
                   list(TOOLS))
        return 0
    except KeyboardInterrupt:
        print('\nbantam: interrupted', file=sys.stderr)
        return 130
    except Exception as e:  # no traceback ever: one line
        print('bantam: %s' % (e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e)),
              file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
