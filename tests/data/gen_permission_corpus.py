# Writes tests/data/permission_corpus.jsonl (run from the repository root: python3 tests/data/gen_permission_corpus.py).
# Each entry: a command and the expected pattern body after "bash.execute:". Expectations are
# written by hand from shell semantics, never copied from the implementation's output.
import json
U = "{unknown}"
E = []
def add(cmd, expect, note=""):
    E.append({"command": cmd, "expect": expect, **({"note": note} if note else {})})

# simple commands: literal command word W -> "W *"
for w, args in [("git","status"),("ls","-la"),("cargo","test --release"),("make","-j4"),("python","-m http.server"),
                ("python3","-c 'print(1)'"),("node","index.js"),("npm","run build"),("pytest","-q tests/"),("grep","-rn foo ."),
                ("cat","README.md"),("echo","hello world"),("printf","'%s\\n' a"),("sed","-n 1,5p file"),("awk","'{print $1}' f"),
                ("/usr/bin/git","log"),("./x.sh","--fast"),("../bin/tool","run"),("bin/run-tests",""),("g++","-O2 a.cc"),
                ("clang-format","-i a.c"),("python3.12","-V"),("docker","ps"),("kubectl","get pods"),("curl","-s https://example.com"),
                ("wget","https://example.com/x"),("rm","-f a.txt"),("mv","a b"),("cp","-r a b"),("mkdir","-p a/b"),
                ("touch","x"),("chmod","+x run.sh"),("tar","xzf a.tgz"),("unzip","a.zip"),("ssh","host uptime"),
                ("true",""),("false",""),(":",""),("cd","/tmp"),("pwd",""),("test","-f x"),
                ("jq",".a file.json"),("rg","pattern"),("fd","-e rs"),("head","-n 5 f"),("tail","-f log"),("wc","-l f"),
                ("sort","-u f"),("uniq","-c"),("diff","a b"),("patch","-p1"),("go","build ./..."),("rustc","--version"),
                ("java","-jar a.jar"),("mvn","package"),("gradle","build"),("pip","list"),("uv","run x"),("ruby","a.rb"),
                ("perl","-ne print f"),("php","-v"),("sqlite3","db .tables"),("psql","-c 'select 1'"),("tmux","ls"),
                ("apt-get","install -y curl"),("sudo","-v"),("x.y-z_w+v@1%2:3",""),("kill","1234")]:
    add(f"{w} {args}".strip(), f"{w.replace('[', chr(92)+'[')} *")
# dialects, subscripts, risky variables
def add_in(dialect, cmd, expect, note=""):
    E.append({"command": cmd, "expect": expect, "dialect": dialect, **({"note": note} if note else {})})
# bash-only constructs: analysed in bash; opaque for a POSIX sh and when the shell is unknown
for c, e in [("echo hi &>/dev/null touch p", "echo *"), ("echo hi &>/dev/null rm -rf ~", "echo *"),
             ("echo hi &>>log touch p", "echo *"), ("echo $'\\' ; touch p ;\n\\''", "echo *"),
             ("echo 'touch p' > ']]'; [[ x || sh ]]; echo ok", "echo *"), ("[[ -f x ]] && ls", "ls *"),
             ("(( 1 + 2 )) && ls", "ls *"), ("ls |& cat", "{cat,ls} *"), ("cat <<< hi", "cat *"),
             ("diff <(ls a) <(ls b)", "{diff,ls} *"), ("ls > >(cat)", "{cat,ls} *"), ("coproc cat", "cat *"),
             ("case x in a) ls;& b) id;; esac", "{id,ls} *"), ("case x in a) ls;;& b) id;; esac", "{id,ls} *"),
             ("a=(1 2); ls", "ls *"), ("a+=x; ls", "ls *"), ("a[1]=x; ls", "ls *"), ("echo ${x/a/b}", "echo *"),
             ("echo ${x:1:2}", "echo *"), ("echo ${x^^}", "echo *"), ("echo ${#a[@]}", "echo *"), ("echo @(a|b)", "echo *"),
             ("echo $\"hi\"", "echo *"), ("echo $[1+2]", "echo *"), ("echo $'a'", "echo *"), ("echo ${x:-'a'}", "echo *"),
             ("sh -c '[[ -f x ]] && ls'", U), ("dash -c 'echo hi &>/dev/null rm x'", U)]:
    add(c, e, "bash reading")
    add_in("posix", c, U, "bash-only construct")
    add_in("unknown", c, U, "bash-only construct")
# text bash and sh read alike keeps its pattern in every bash-like dialect
for c, e in [("git status && git push", "git *"), ("cd src; make -j4 2>&1 | tail -n 20", "{cd,make,tail} *"),
             ("echo \"$HOME\" '$x' \"${x%.rs}\" ${x:-a}", "echo *"), ("time git status", "git *"), ("! git diff --quiet", "git *"),
             ("if test -f x; then cat x; fi", "{cat,test} *"), ("cat <<EOF\nhi\nEOF", "cat *"), ("echo $((1 + 2)) $# $?", "echo *"),
             ("bash -c '[[ -f x ]] && ls'", "ls *"), ("sh -c 'ls | wc -l'", "{ls,wc} *"), ("x=$(date); echo \"[$x]\"", "{date,echo} *"),
             ("grep -E '\\[ERROR\\]' log", "grep *"), ("echo \"[$(date +%T)] done\"", "{date,echo} *")]:
    add(c, e)
    add_in("posix", c, e)
    add_in("unknown", c, e)
# zsh, fish and other shells: only plain text keeps its pattern
for c, e in [("git status", "git *"), ("git status && git push", "git *"), ("cd src; make -j4 | tail -n 20", "{cd,make,tail} *"),
             ("ls -la ./x,y:z@1+2", "ls *"), ("FOO=1 git status", "git *"), ("echo a=b", "echo *"), ("sh -c ls", "ls *"),
             ("echo *(e:\"touch p\":)", U), ("x='$(touch p)'; echo ${(e)x}", U), ("echo '\\'' ; touch f1 ; # '", U),
             ("echo $x", U), ("make 2>&1", U), ("ls ~", U), ("echo \"a\"", U), ("ls # x", U), ("echo [a]", U),
             ("=ls", U), ("kill %1", U), ("- rm x", U), ("not rm x", U), ("true; and rm x", U), ("noglob rm *", U),
             ("set PATH /tmp; git status", U), ("set -gx PATH /tmp", U), ("path=/tmp git status", U), ("PATH=/x git", U),
             ("zsh -c 'ls'", U), ("r", U), ("ls\\ x", U), ("echo a\\\nb", U),
             ("for path in /tmp; do git; done", U), ("read path", U), ("echo PATH", U), ("hash git=/tmp/x; git", U),
             ("python3 -m http.server", "python3 *"), ("cat path/to/file", "cat *")]:
    add_in("other", c, e, "zsh/fish: plain text only")
# fish reaches its shipped functions before any program: some run other programs
for c, e in [("ll src", U), ("la", U), ("help", U), ("open README.md", U), ("funced x", U), ("fish_config", U),
             ("fish_update_completions", U), ("__fish_print_hostnames", U), ("true && ll", U), ("alias ls=rm", U),
             ("ls -la src", "ls *"), ("grep -rn foo src", "grep *"), ("man git", "man *"), ("env ll", U)]:
    add_in("other", c, e, "fish function")
# arithmetic and array subscripts evaluate variables' values as code
for c in ["git status \"${a[$'\\x24(touch p)']}\"", "echo ${a[$'\\x60touch p\\x60']}", "[[ 'a[$(touch p)]' -eq 1 ]] || echo",
          "test -v 'a[$(touch p)]'", "[ -v 'a[$(touch p)]' ]", "[[ -v 'a[$(touch p)]' ]]", "printf -v 'a[$(touch p)]' x",
          "printf -v'a[$(touch p)]' x", "read 'a[$(touch p)]' <<< 1", "read -r x 'a[i]' <<< 1", "read -a 'a[i]' <<< 1",
          "declare 'a[$(touch p)]'=1", "typeset 'a[i]=1'", "local 'a[i]'", "export 'a[i]=1'", "unset 'a[i]'",
          "getopts ab 'a[i]'", "wait -p 'a[i]'", "let $'a[\\x24(touch p)]'", "let x=1", "let i++",
          "x='a[$(touch p)]'; echo $((x))", "echo $((x + 1))", "echo ${y[x]}", "echo ${y[$i]}", "echo ${!x}", "echo ${x:x}",
          "echo ${x:1:n}", "[[ $x -eq 1 ]]", "[[ x -gt 1 ]] && ls", "(( x > 1 )) && echo big", "for ((i=0;i<3;i++)); do echo $i; done",
          "a[i]=1", "m[$(touch p)]=1", "a=([i]=1)", "declare -i n=x", "declare -n r=PATH; r=/tmp; git", "local -n r=PATH",
          "typeset -n r=PATH", "echo 'a[$(id)]'", "declare -a a=([x]=1)", "local a=([i]=1)", "declare -A m=([key]=v)", "declare -a a='([x]=1)'", "declare -a a=$v",
          "a=(); declare a=$v", "[[ -v $x ]]", "test -v \"$x\"", "printf -v \"$x\" 1", "printf -v$x 1", "declare a=\"$v\"", "local -a a=$v", "declare a='(1)'", "echo $'a[\\x60id\\x60]'"]:
    add(c, U, "arithmetic or subscript")
for c, e in [("echo ${a[0]} ${a[@]} ${#a[*]}", "echo *"), ("read -r a b <<< 1", "read *"), ("printf -v x %s 1", "printf *"),
             ("declare -i n=5", U), ("declare -i n; n=$v", U), ("test -v x && ls", "{ls,test} *"), ("[[ 2 -gt 1 ]] && ls", "ls *"),
             ("unset x y", "unset *"), ("declare -a a=(1 2) b=([0]=x)", "declare *"), ("local x=$1 y=\"$(pwd)\"", "{local,pwd} *"),
             ("export FOO=$(pwd)", "{export,pwd} *"), ("echo \"a[`id`]\"", "{echo,id} *"), ("a[0]=1; ls", "ls *"), ("echo $(( $# + 1 ))", "echo *")]:
    add(c, e)
# bash's command hash and alias tables, and other variables that change what runs
for c in ["BASH_CMDS[git]=/usr/bin/touch; git p", "BASH_CMDS=([git]=/usr/bin/touch); git p",
          "printf -v 'BASH_CMDS[git]' /usr/bin/touch; git p", "read 'BASH_CMDS[git]' <<< /usr/bin/touch; git p",
          "shopt -s expand_aliases; BASH_ALIASES[ls]='touch p'; ls", "declare -A BASH_ALIASES; ls", "BASH_XTRACEFD=1 ls",
          "BASH_COMPAT=31 ls", ": ${BASH_CMDS[git]:=/usr/bin/touch}; git p", ": ${PATH:=/tmp}; git", "EXECIGNORE=x ls",
          "TAR_OPTIONS=--to-command=x tar xf a.tar", "RSYNC_RSH=x rsync a b", "npm_config_script_shell=x npm test",
          "NPM_CONFIG_SCRIPT_SHELL=x npm test", "Npm_Config_Script_Shell=x npm test", "LUA_INIT=@x lua", "LUA_INIT_5_4=@x lua",
          "VIMINIT=x vim", "EXINIT=x vi", "OPENSSL_CONF=x openssl", "GOFLAGS=-toolexec=x go build", "SUDO_EDITOR=x sudoedit f",
          "FCEDIT=x ls", "PERL5OPT=-Mx perl", "RUBYOPT=-rx ruby", "NODE_OPTIONS=--require=x node", "PYTHONSTARTUP=x python",
          "PYTHONPATH=x python", "JAVA_TOOL_OPTIONS=x java", "GCONV_PATH=x iconv", "LESSOPEN='|x %s' less f", "MANPAGER=x man ls",
          "export BASH_ENV=x; bash s.sh", "env BASH_FUNC_ls%%='() { id; }' bash s.sh",
          "echo {PATH}>/dev/null; git status", "exec {PATH}>/dev/null; git", "ls {x}<f", "coproc PATH { cat; }; git",
          "wait -n -p PATH; git", "set -k; git status PATH=/tmp", "set -o keyword; git", "PS1='$(id)' ls", "PS0='$(id)'",
          "POSIXLY_CORRECT=1; ls", "BASH=/x ls", "auto_resume=1; ls"]:
    add(c, U, "risky variable")
for c in ["time -- touch p", "-x", "--help"]:
    add(c, U, "a command word that is an option")
# `env -` is `env -i`: it clears the environment and runs the command after it.
add("env - touch p", "touch *"); add("exec env - rm x", "rm *")
for c, e in [("echo {x} > f", "echo *"), ("set -e; ls", "{ls,set} *"), ("set -o pipefail; ls", "{ls,set} *"), ("wait -n -p pid", "wait *")]:
    add(c, e)
add_in("other", "precmd_functions+=touch", U, "zsh hook"); add_in("other", "PROMPT=x", U, "zsh prompt")
# here-documents, shared stdin, history expansion
# a quote left open in a here-document delimiter runs it on past the blank
add('cat <<"E x\nhi', U); add("cat <<'E O F'\nx\nE O F", U)
# A line continuation (backslash-newline) in text with a here-document: the shells join it
# inside an unquoted body ($\ then ( is a substitution) and bash even on the delimiter line.
for c in ["cat <<EOF\nx\nEO\\\nF\ntouch p\nEOF", "cat <<EOF\n$\\\n(touch p)\nEOF", "cat <<-EOF\n\t$\\\n(touch p)\nEOF",
          "cat <<'EOF'\nx\\\ny\nEOF", "echo a\\\nb; cat <<EOF\nx\nEOF", "echo $(cat <<EOF\nx\nEO\\\nF\ntouch p\nEOF\n)",
          "bash -c 'cat <<EOF\n$\\\n(touch p)\nEOF'"]:
    add(c, U)
for c, e in [("echo a\\\nb", "echo *"), ("cat <<EOF\n$(ls)\nEOF", "{cat,ls} *")]:
    add(c, e)
# Only a here-document or here-string on descriptor 0 is a shell's script; anything later
# on descriptor 0, or a script path naming another descriptor, makes the script unknown.
for c in ["echo 'touch p' | sh 3<<EOF\ngit status\nEOF", "echo 'touch p' | bash 3<<< 'git status'",
          "echo 'touch p' | sh 1<<EOF\ngit status\nEOF", "sh <<EOF <&3\ngit status\nEOF", "sh <<EOF <>x\ngit status\nEOF",
          "sh <<EOF 0<x\ngit status\nEOF", "sh <<EOF <x\ngit status\nEOF", "sh /dev/fd/3 3<x <<EOF\ngit status\nEOF",
          "sh /proc/self/fd/3 <<EOF\ngit status\nEOF", "bash -c \"sh 3<<< 'git status'\""]:
    add(c, U)
for c, e in [("sh 0<<EOF\ngit status\nEOF", "git *"), ("sh 3<x <<EOF\ngit status\nEOF", "git *"),
             ("sh /dev/fd/0 <<EOF\ngit status\nEOF", "git *"), ("bash 0<<< 'git status'", "git *"),
             ("cat 3<<EOF\nx\nEOF", "cat *"), ("sh <<EOF 2>&1\ngit status\nEOF", "git *")]:
    add(c, e)
# A shell reading its script from standard input shares that input with the commands it
# runs (`read`, `head`, `exec 0<x`): a script of more than one line is unknown, and so is
# one that redirects descriptor 0 of `exec`.
for c in ["bash <<'EOF'\nread -N 1 x\n#touch p\nEOF", "bash <<'EOF'\nread x\n: <<Y\ntouch p\nY\nEOF",
          "sh <<'EOF'\nexec 0<x\nEOF", "bash <<'EOF'\nexec 3<x; exec 0<&3\nEOF", "sh <<EOF\ngit status\n\nls\nEOF",
          "bash <<< $'git status\\nls'", "sh <<'EOF'\ncommand exec 0<x\nEOF"]:
    add(c, U)
for c, e in [("sh <<EOF\ngit status; ls\nEOF", "{git,ls} *"), ("sh <<EOF\n\ngit status\n\nEOF", "git *"),
             ("bash <<< 'git status \\\n  --short'", "git *"), ("sh <<EOF\nexec git status\nEOF", "git *"),
             ("sh -c 'exec 0<x; git status'", "{exec,git} *")]:
    add(c, e)
# History expansion (bash): `!:1` and the like rebuild commands out of earlier text.
for c in ["set -o history -H\n: \"x;touch p\"\necho !:1:s^\"^^:s^\"^^", "set -H", "set -eH", "set -Ho history",
          "set -o histexpand", "set -o history", "shopt -so history histexpand", "shopt -s histexpand",
          "history -s 'x;touch p'", "history -r f", "bash -H -c 'echo !!'", "bash -o histexpand -c ls",
          "builtin set -H", "set $x", "set -o posix -o history", "set -o pipefail -H", "bash -o posix -O histexpand -c ls"]:
    add(c, U)
for c, e in [("set -e; ls", "{ls,set} *"), ("set +H; ls", "{ls,set} *"), ("shopt -s nullglob", "shopt *"), ("history", "history *"),
             ("set -- \"$@\"; ls", "{ls,set} *"), ("bash -c 'ls' -H", "ls *"),
             ("set -o pipefail -o errexit; ls", "{ls,set} *"), ("bash -o pipefail -c ls", "ls *")]:
    add(c, e)
# quoting and escaping of the command word
add("'git' status", "git *"); add('"git" status', "git *"); add("g\\it status", "git *"); add("$'git' status", "git *")
add("gi''t status", "git *"); add('gi""t log', "git *"); add("\\git diff", "git *")
add("'/usr/bin/git' log", "/usr/bin/git *")
# whitespace and comments
for c in ["  git status", "git status   ", "\tgit status\t", "git status # comment", "# first\ngit status",
          "git status\n", "\n\ngit status\n\n", "git status;", "git status ; # done", "  \t git \t status \t"]:
    add(c, "git *")
# assignments skipped
for c in ["FOO=1 git status", "FOO=1 BAR=2 git status", "A='x y' git status", "A=$(echo x) git status",
          "LANG=C git log", "TERM=dumb git status", "FOO= git status", "x=1; git status", "GIT=1 ls"]:
    add(c, "{echo,git} *" if "$(echo" in c else ("ls *" if c.endswith("ls") else "git *"))
# risky variables -> opaque
for v in ["PATH=/tmp", "LD_PRELOAD=/tmp/x.so", "LD_LIBRARY_PATH=.", "BASH_ENV=/tmp/x", "ENV=/tmp/x", "IFS=/",
          "PS4='$(rm -rf ~)'", "SHELLOPTS=xtrace", "BASHOPTS=x", "GIT_SSH_COMMAND=evil", "GIT_DIR=/tmp/x",
          "PYTHONPATH=/tmp", "PYTHONSTARTUP=/tmp/x", "NODE_OPTIONS=--require=x", "PERL5OPT=-Mx", "RUBYOPT=-rx",
          "HOME=/tmp", "EDITOR=evil", "PAGER=evil", "CARGO_TARGET_DIR=x"]:
    add(f"{v} git status", U, "risky variable")
    add(f"env {v} git status", U, "risky variable via env")
add("export PATH=/tmp:$PATH; git status", U); add("PATH=/tmp; git status", U); add("declare PATH=/x; ls", U)
add("read PATH < f; git", U); add("printf -v PATH %s /tmp; git", U); add("for PATH in /tmp; do git; done", U)
add("local LD_PRELOAD=x", U); add("readonly IFS=x", U); add("typeset -x GIT_DIR=x; git status", U); add("unset PATH; ls", U)
add("export FOO=1; git status", "{export,git} *"); add("export FOO=$(pwd)", "{export,pwd} *")
# chaining: all parts named, sorted
chains = [("true && rm -rf ~", "{rm,true} *"), ("git status; rm -rf ~", "{git,rm} *"), ("rm -rf ~; git status", "{git,rm} *"),
          ("git status || rm x", "{git,rm} *"), ("git status | rm x", "{git,rm} *"), ("git status & rm x", "{git,rm} *"),
          ("git status\nrm x", "{git,rm} *"), ("(git status; rm x)", "{git,rm} *"), ("{ git status; rm x; }", "{git,rm} *"),
          ("git add . && git commit -m x", "git *"), ("git fetch && git rebase origin/main && git push", "git *"),
          ("ls | grep foo | wc -l", "{grep,ls,wc} *"), ("cd src && make", "{cd,make} *"),
          ("cargo build && cargo test 2>&1 | tail -n 20", "{cargo,tail} *"), ("make || true", "{make,true} *"),
          ("a; b; c; a; b", "{a,b,c} *"), ("git status &", "git *"), ("! git diff --quiet", "git *"),
          ("time git status", "git *"), ("git status |& cat", "{cat,git} *")]
for c, e in chains: add(c, e)
# compound commands
for c, e in [("if true; then rm x; fi", "{rm,true} *"), ("if git diff --quiet; then echo clean; else echo dirty; fi", "{echo,git} *"),
             ("while read l; do echo $l; done < f", "{echo,read} *"), ("until false; do sleep 1; done", "{false,sleep} *"),
             ("for f in *.rs; do rustfmt $f; done", "rustfmt *"), ("for f in $(ls); do cat $f; done", "{cat,ls} *"),
             ("case $x in a) rm a;; b) ls;; esac", "{ls,rm} *"), ("case $(uname) in Linux) echo l;; esac", "{echo,uname} *"),
             ("[[ -f x ]] && echo y", "echo *"), ("[[ $(whoami) == root ]] && id", "{id,whoami} *"), ("(( x > 1 )) && echo big", U),
             ("for ((i=0;i<3;i++)); do echo $i; done", U), ("if [ -f x ]; then cat x; fi", U), ("if test -f x; then cat x; fi", "{cat,test} *"),
             ("select x in a b; do echo $x; break; done", U), ("coproc cat", "cat *"),
             ("{ echo a; } > out.txt", "echo *"), ("( cd /tmp && ls ) 2>/dev/null", "{cd,ls} *")]:
    add(c, e)
# substitutions everywhere
for c, e in [('echo "$(rm -rf /)"', "{echo,rm} *"), ("echo $(rm x)", "{echo,rm} *"), ("echo `rm x`", "{echo,rm} *"),
             ('echo "a`rm x`b"', "{echo,rm} *"), ("echo a$(rm x)b", "{echo,rm} *"), ("git commit -m \"$(date)\"", "{date,git} *"),
             ("echo > $(rm x)", "{echo,rm} *"), ("cat < `rm x`", "{cat,rm} *"), ("echo $(echo $(rm x))", "{echo,rm} *"),
             ("diff <(ls a) <(ls b)", "{diff,ls} *"), ("tee >(rm x) < f", "{rm,tee} *"), ("cat <(curl -s x)", "{cat,curl} *"),
             ("echo $((1 + 2))", "echo *"), ("x=$(rm x)", "rm *"), ("x=`whoami`", "whoami *"), ("arr=(a $(rm x))", "rm *"),
             ("echo ${HOME}/x", "echo *"), ("echo ~/x", "echo *"), ('echo "$HOME"', "echo *"), ("cat <<EOF\n$(rm x)\nEOF", "{cat,rm} *"),
             ("cat <<'EOF'\n$(rm x)\nEOF", "cat *"), ("cat <<< \"$(rm x)\"", "{cat,rm} *"), ("echo $( (rm x) )", "{echo,rm} *"),
             ("for f in `ls`; do :; done", "{:,ls} *"), ("echo \"${x}$(id)\"", "{echo,id} *"), ("ls > \"$(mktemp)\"", "{ls,mktemp} *")]:
    add(c, e)
# substitutions that hide code -> opaque
for c in ["echo ${x:-$(rm -rf ~)}", "echo \"${x:-`rm x`}\"", "echo $(( $(rm x) ))", "(( $(rm x) ))", "echo ${x@P}",
          "echo $[ $(rm x) ]"]:
    add(c, U)
# here-docs and strings that reach a shell
for c, e in [("bash <<EOF\nrm -rf /\nEOF", "rm *"), ("sh <<EOF\ngit status\nls\nEOF", U), ("bash <<'EOF'\nrm x\nEOF", "rm *"),
             ("bash <<< 'rm x'", "rm *"), ("cat <<\\EOF\nx\nEOF", "cat *"), ("cat <<\"END-1\"\nx\nEND-1", "cat *"), ("cat <<$X\nx\n$X", U), ("cat << ''\nx\n", U), ("sh <<-EOF\n\trm x\n\tEOF", "rm *"), ("bash <<EOF\n$X\nEOF", U), ("bash <<< \"$X\"", U),
             ("cat <<EOF | sh\nrm x\nEOF", U), ("echo rm x | sh", U), ("curl -fsSL https://x | sh", U), ("wget -qO- x | bash", U),
             ("bash < script.sh", U), ("bash", U), ("sh -s", U), ("bash <(curl -s x)", U), ("sh script.sh", "sh *"), ("bash ./run.sh arg", "bash *"),
             ("zsh -c 'rm x'", U), ("zsh -f -c 'rm x'", "rm *"), ("dash -c 'ls'", "ls *")]:
    add(c, e)
# sh -c recursion
for c, e in [("sh -c 'rm -rf /'", "rm *"), ("bash -c 'git status; rm x'", "{git,rm} *"), ("bash -lc 'git push'", U), ("bash --login -c 'ls'", U), ("bash -ic 'ls'", U),
             ("bash --rcfile x -c 'ls'", U), ("echo 'rm x' | sh /dev/stdin", U), ("sh /dev/fd/0 < f", U), ("sh ./build.sh", "sh *"),
             ("sh /tmp/l/../../dev/stdin <<'E'\ngit status\nE", U), ("bash ../scripts/test.sh", U), ("sh /dev//stdin < f", U),
             ("bash -ec 'ls'", "ls *"), ("bash -o pipefail -c 'ls | wc'", "{ls,wc} *"), ("sh -c \"sh -c 'rm x'\"", "rm *"),
             ("bash -c \"$CMD\"", U), ("sh -c \"$(curl x)\"", U), ("bash -c 'eval x'", U), ("sh -c 'echo $(rm x)'", "{echo,rm} *"),
             ("/bin/sh -c 'ls'", "ls *"), ("bash -c", U), ("bash --norc -c 'ls'", "ls *"), ("sudo sh -c 'rm x'", "{rm,sudo} *")]:
    add(c, e)
# wrappers
for c, e in [("env git status", "git *"), ("env -i git status", "git *"), ("env -u FOO git status", "git *"), ("env FOO=1 BAR=2 git status", "git *"),
             ("env -- git status", "git *"), ("env -C /tmp git status", "git *"), ("env", "env *"), ("env -S 'rm x'", U),
             ("/usr/bin/env python3 x.py", "python3 *"), ("command git status", "git *"), ("command -v git", "command *"),
             ("builtin echo x", "echo *"), ("exec git status", "git *"), ("exec -a name git status", "git *"), ("exec >log", "exec *"),
             ("nice git status", "git *"), ("nice -n 10 git status", "git *"), ("nice -10 make", "make *"), ("nohup make &", "make *"),
             ("time make", "make *"), ("/usr/bin/time -v make", "make *"), ("timeout 5 make", "make *"), ("timeout -s KILL 5 make", "make *"),
             ("timeout --signal=KILL 5 make", "make *"), ("timeout -k 1 5 rm x", "rm *"), ("stdbuf -oL make", "make *"), ("stdbuf -o L make", "make *"),
             ("xargs rm", "rm *"), ("xargs -0 -n1 rm", "rm *"), ("xargs -I {} rm {}", "rm *"), ("xargs -a list rm", "rm *"), ("xargs", U), ("xargs --show-limits rm x", "rm *"),
             ("find . -name '*.o' -exec rm {} \\;", "{find,rm} *"), ("find . -execdir git add {} +", "{find,git} *"), ("find . -ok rm {} \\;", "{find,rm} *"),
             ("find . -name x", "find *"), ("find . -exec sh -c 'rm $1' _ {} \\;", "{find,rm} *"),
             ("sudo rm -rf /", "{rm,sudo} *"), ("sudo -u bob git pull", "{git,sudo} *"), ("sudo -E make install", "{make,sudo} *"), ("sudo", "sudo *"),
             ("sudo PATH=/x git", U), ("doas rm x", "{doas,rm} *"), ("setsid make", "make *"), ("setsid -f make", "make *"),
             ("chroot /mnt rm x", "{chroot,rm} *"), ("ionice -c 3 make", "make *"), ("ionice -c3 -n7 make", "make *"), ("taskset 0x1 make", "make *"),
             ("taskset -c 0,1 make", "make *"), ("watch -n 1 'ls | wc -l'", "{ls,wc} *"), ("watch -x ls", "ls *"), ("flock /tmp/l make", "make *"),
             ("flock /tmp/l -c 'rm x'", "rm *"), ("strace -f -o out make", "make *"), ("strace -e trace=open ls", "ls *"), ("unbuffer make", "make *"),
             ("script -q -c 'rm x' /dev/null", "rm *"), ("su -c 'rm x' root", "{rm,su} *"), ("su root", U), ("busybox rm x", "rm *"),
             ("nice nohup timeout 5 env FOO=1 git status", "git *"), ("xargs sh -c 'rm \"$@\"' _", "rm *"), ("command $CMD", U), ("env $X", U),
             ("sudo $CMD", U), ("timeout $T make", U), ("timeout \"$T\" make", U), ("find $d -name x", U), ("find . -name '*.txt' -exec grep \"$pat\" {} +", "{find,grep} *"), ("find . -exec $CMD {} +", U), ("find . -exec rm {} \\; -name \"$x\"", U), ("nice -n $N make", U), ("xargs -0 $CMD", U)]:
    add(c, e)
# opaque constructs
for c in ["eval \"$X\"", "eval 'rm x'", "source ./env.sh", ". ./env.sh", "$CMD x", "${CMD} x", "\"$CMD\" x", "$(echo rm) x", "`echo rm` x",
          "~/\"$x\"", "~/bin/tool", "alias x=rm; x", "alias ls='rm -rf'", "f() { rm -rf /; }; f", "function f { ls; }", "git() { rm x; }; git status",
          ":(){ :|:& };:", "trap 'rm x' EXIT", "hash -p /tmp/evil git; git status", "enable -f x.so y", "fc -s", "let 'x=$(rm)'",
          "mapfile -C cb arr", "echo 'unterminated", "echo \"unterminated", "if true; then", "( ls", "ls )", "case x in", "for", "done",
          "$x", "a$b", "g*t status", "gi?t status", "[a-z]it status", "{rm,-rf,x}", "rm\u00e9 x", "git\\ status x", "'git status'",
          "\"git status\" x", "'' x", "\"\"", "*", "''", "a,b c", "a{b", "\x00", "git\x00 status", "ls\x00; rm x", "", "   ", "# only a comment",
          "FOO=1", "x=1 y=2", ">out.txt", "< in.txt", "@(rm) x", "!(x) y", "$'r\\x6d' -rf ~", "$\"git\" status", "~ x", "~root/x y"]:
    add(c, U)
# paths kept as written
for c, e in [("/bin/rm x", "/bin/rm *"), ("./rm x", "./rm *"), ("../git x", "../git *"), ("/usr/local/bin/python3 -m x", "/usr/local/bin/python3 *"),
             ("/usr/bin/env git", "git *"), ("/usr/bin/sudo rm x", "{/usr/bin/sudo,rm} *"), ("./x.sh && ./y.sh", "{./x.sh,./y.sh} *")]:
    add(c, e)
# adversarial mixes
for c, e in [("git status; $(rm -rf ~)", U), ("git status && eval x", U), ("git log --format='%H' | xargs -n1 git show", "git *"),
             ("git status # ; rm -rf ~", "git *"), ("git status '; rm -rf ~'", "git *"), ("git status \"; rm -rf ~\"", "git *"),
             ("git status \\; rm -rf ~", "git *"), ("git status\\\n; rm x", "{git,rm} *"), ("git status `# comment`", "git *"),
             ("echo $(git status) && rm x", "{echo,git,rm} *"), ("git push || (rm -rf ~ &)", "{git,rm} *"),
             ("git status && { sudo rm -rf /; }", "{git,rm,sudo} *"), ("git status | sh", U), ("git -c alias.x='!rm' x", "git *"),
             ("git status 2>&1 >/dev/null", "git *"), ("git status > >(rm x)", "{git,rm} *"), ("git $(rm x)", "{git,rm} *"),
             ("git diff | less", "{git,less} *"), ("GIT_PAGER=cat git log", U), ("git status\r", "git *"), ("[ -f x ] && ls", U), ("a=b", U)]:
    add(c, e)
# deep nesting
add("$(" * 10000 + "rm" + ")" * 10000, U, "10 000 nested substitutions")
add("echo " + "$(echo " * 12 + "x" + ")" * 12, "echo *", "12 nested substitutions: the parenthesis limit")
add("echo " + "$(echo " * 13 + "x" + ")" * 13, U, "13 nested substitutions: over the parenthesis limit")
add("((((((((((((((((((((((((((((((A", U, "unclosed parentheses make the parser backtrack exponentially")
add("((" * 14 + "A", U)
add("(" * 5000 + "ls" + ")" * 5000, U)
add("{ " * 3000 + "ls" + "; }" * 3000, U)
add("if true; then " * 2000 + "ls" + "; fi" * 2000, U)
add("sh -c \"" + "sh -c \\\"" * 3 + "ls" + "\\\"" * 3 + "\"", U, "escaped quotes are not unescaped twice")
add("echo " + "a" * 100000, "echo *", "a 100 000 character argument")
add("ls && " * 2000 + "ls", "ls *")
# wrapper options, replace-strings, more wrappers
for c, e in [
        # GNU long-option abbreviations resolve against the wrapper's full option table
        ("env --u git touch p", "touch *"), ("env --uns=git touch p", "touch *"), ("env --spl='touch p' git", U),
        ("env --split-string='touch p' git", U), ("env --s='touch p' git", U), ("env -vS'touch p' git", U),
        ("env --i git status", U), ("env --ignore-e git status", "git *"), ("env --ignore-env git status", "git *"), ("env --ch /tmp git status", "git *"),
        ("env --x git", U), ("env -X git", U), ("env --help git", "env *"), ("env - git status", "git *"),
        ("env --u X rm -rf ~", "rm *"), ("env --debug=x git", U), ("env --block-signal git status", "git *"),
        ("xargs --arg /dev/null git touch p", "git *"), ("xargs --arg git touch p", "touch *"), ("xargs --arg-file=/dev/null git status", "git *"),
        ("xargs --proc git touch p", "touch *"), ("xargs --max 1 git", U), ("xargs --max-args 1 git show", "git *"),
        ("xargs -P4 -n1 git show", "git *"), ("xargs -E x git log", "git *"), ("xargs -ex git log", "git *"), ("xargs -e git log", "git *"),
        ("xargs --eof git log", "git *"), ("xargs --eof=x git log", "git *"), ("xargs -Z git", U), ("xargs --bogus git", U),
        ("timeout --sig KILL 5 rm -rf ~", "rm *"), ("timeout --s=KILL 5 make", "make *"), ("timeout --k 1 5 make", "make *"),
        ("timeout --kill 1 5 make", "make *"), ("timeout --pre 5 make", "make *"), ("timeout -v 5 make", "make *"), ("timeout -q 5 make", U),
        ("timeout --foreground --verbose 5 git status", "git *"), ("timeout -sKILL 5 make", "make *"), ("timeout -k1 -sKILL 5 make", "make *"),
        ("nice --adj 5 git status", "git *"), ("nice --adjustment=5 make", "make *"), ("nice -n5 make", "make *"), ("nice --5 make", "make *"),
        ("nice -x make", U), ("stdbuf --out=L make", "make *"), ("stdbuf --o L make", "make *"), ("stdbuf -oL -eL make", "make *"),
        ("nohup --help rm", "nohup *"), ("nohup -- make", "make *"), ("nohup -x make", U),
        ("/usr/bin/time -f %e make", "make *"), ("/usr/bin/time --format %e make", "make *"), ("/usr/bin/time --form %e make", "make *"),
        ("setsid --fork make", "make *"), ("setsid --w make", "make *"), ("setsid -x make", U),
        ("ionice --class 3 make", "make *"), ("ionice -c 3 -p 1", "ionice *"), ("ionice --cl 3 make", U), ("ionice --classd 7 make", "make *"),
        ("taskset --cpu-list 0,1 make", "make *"), ("taskset -p 1", "taskset *"), ("taskset -x 1 make", U),
        ("chrt -f 10 make", "make *"), ("chrt --fifo 10 make", "make *"), ("chrt --fi 10 make", U), ("chrt -p 10 1", "chrt *"),
        ("watch --interval 1 ls", "ls *"), ("watch -n1 -x ls", "ls *"), ("watch --int 1 ls", U),
        ("command -p git status", "git *"), ("command -x git", U), ("exec -c git status", "git *"), ("exec -x git", U),
        # strace and ltrace
        ("strace -o '|touch p' git status", U), ("strace -o'!touch p' git status", U), ("strace --output='|touch p' git", U),
        ("strace -fo'|touch p' git", U), ("strace -o out.txt git status", "git *"), ("strace -E LD_PRELOAD=/tmp/x.so git", U),
        ("strace -E PATH=/tmp git", U), ("strace --env=LD_PRELOAD=x git", U), ("strace -E FOO=1 git status", "git *"),
        ("strace -E FOO git status", "git *"), ("strace --outp=x git", U), ("strace -f -e trace=execve git status", "git *"),
        ("strace -p 1", "strace *"), ("strace -L git", U), ("ltrace -o out git status", "git *"), ("ltrace -l libc.so git", "git *"),
        # flock, script, su, hash
        ("flock /tmp/l tar -c git -f q6", "tar *"), ("flock /tmp/l -c 'touch p'", "touch *"), ("flock /tmp/l --command 'touch p'", "touch *"),
        ("flock -n /tmp/l -c 'touch p'", "touch *"), ("flock -w 5 /tmp/l make", "make *"), ("flock --timeout 5 /tmp/l make", "make *"),
        ("flock -x /tmp/l git -c x=y status", "git *"), ("flock 9", "flock *"), ("flock -c 'touch p' /tmp/l", U),
        ("script -qc 'touch p' /dev/null", "touch *"), ("script --command 'touch p' /dev/null", "touch *"),
        ("script --command='touch p' /dev/null", U), ("script -c'touch p' /dev/null", U), ("script -q /dev/null -c 'touch p'", "touch *"),
        ("script -q /dev/null", U), ("script -q /dev/null <<EOF\ntouch p\nEOF", "touch *"), ("script -x /dev/null", U),
        ("su -lc 'touch p'", "{su,touch} *"), ("su -l -c 'touch p' root", "{su,touch} *"), ("su root -c 'touch p'", "{su,touch} *"),
        ("su -c'touch p'", U), ("su --command='touch p'", U), ("su --session-command 'touch p'", "{su,touch} *"),
        ("su - root -c 'touch p'", "{su,touch} *"), ("su root script.sh", U), ("su -s /usr/bin/python3 -c 'x' root", U),
        ("su -s /bin/bash -c 'ls' root", "{ls,su} *"), ("su -", U), ("su -x root", U), ("su root -- -ic 'touch p'", U),
        ("hash -rp /usr/bin/touch git; git p", U), ("hash -pr /usr/bin/touch git", U), ("hash -r", "hash *"), ("hash -d git", "hash *"),
        ("hash -p /x git", U),
        # replace-strings inside nested code
        ("echo 'x;touch p' | xargs -I{} sh -c 'echo {}'", U), ("xargs -I {} sh -c 'echo {}'", U), ("xargs -i sh -c 'echo {}'", U),
        ("xargs -iX sh -c 'echo X'", U), ("xargs --replace sh -c 'echo {}'", U), ("xargs --replace=R sh -c 'echo R'", U),
        ("xargs --rep=R sh -c 'echo R'", U), ("xargs -Iecho sh -c 'echo'", U), ("xargs -I R bash -c 'echo R' _", U),
        ("xargs -I{} sh -c 'rm \"$1\"' _ {}", "rm *"), ("xargs -I{} rm {}", "rm *"), ("xargs -I{} git show {}:x", "git *"),
        ("xargs -I{} {} x", U), ("xargs -I{} env {} x", U), ("xargs -I{} nice -n {} rm x", U), ("xargs -I{} timeout {} rm x", U),
        ("xargs -I{} bash {}", U), ("xargs -I{} sudo -u {} ls", U), ("xargs -I{} find . -exec rm {} \\;", "{find,rm} *"),
        ("xargs -I{} find {} -name x", U), ("xargs -I git git status", U), ("xargs -I@ sh -c 'echo hi' @", "echo *"),
        ("find . -exec sh -c 'echo {}' \\;", U), ("find . -name x -execdir sh -c 'cat {}' \\;", U), ("find . -ok bash -c 'rm {}' \\;", U),
        ("find . -okdir sh -c 'ls {}' \\;", U), ("find . -exec sh -c 'echo \"$1\"' _ {} \\;", "{echo,find} *"),
        ("find . -exec sh -c 'rm \"$@\"' _ {} +", "{find,rm} *"), ("find . -exec {} \\;", U), ("find . -exec env {} \\;", U),
        ("find . -exec nice {} +", U), ("find . -exec timeout 5 rm {} \\;", "{find,rm} *"), ("find . -exec sudo -u {} ls \\;", U),
        # appended input that would become the command or code
        ("xargs env", U), ("xargs nice", U), ("xargs timeout 5", U), ("xargs sudo", U), ("xargs sh", U), ("xargs sh -c", U),
        ("xargs bash -c 'echo hi'", "echo *"), ("xargs find .", U), ("xargs find . -exec rm {} +", U), ("xargs xargs", U),
        ("xargs git log", "git *"), ("xargs -0 rm -f", "rm *"), ("xargs nice rm", "rm *"), ("xargs env FOO=1 rm", "rm *"),
        ("xargs sudo -s echo", U), ("xargs watch ls", U), ("xargs -n1 git show", "git *"),
        # parallel
        ("parallel rm ::: x", "rm *"), ("parallel gzip ::: a b", "gzip *"), ("parallel -j4 gzip {} ::: a b", "gzip *"),
        ("parallel --jobs 4 gzip ::: a", "gzip *"), ("parallel -k echo ::: a b", "echo *"), ("parallel ::: 'touch p'", U),
        ("parallel 'touch p;echo' ::: x", U), ("parallel echo 'a;touch p' ::: x", U), ("parallel sh -c 'echo {}' ::: x", U),
        ("parallel sh -c ::: 'touch p'", U), ("parallel env ::: touch", U), ("parallel nice ::: rm", U), ("parallel echo {=s/a/b/=} ::: a", U),
        ("parallel --pipe wc", U), ("parallel --j 2 rm ::: x", U), ("parallel -q rm ::: x", U), ("ls | parallel gzip", "{gzip,ls} *"),
        ("parallel {} ::: ls", U), ("parallel --tag rm {} ::: x", "rm *"),
        # privilege, namespaces and sandboxes: visible wrappers
        ("runuser -u bob -- git status", "{git,runuser} *"), ("runuser -u bob git status", "{git,runuser} *"), ("runuser -u bob ls -l", U), ("runuser -u bob ls -P", U), ("runuser -u bob -- ls -P", "{ls,runuser} *"),
        ("runuser -u bob ls -x", U), ("runuser -l bob -c 'touch p'", "{runuser,touch} *"), ("runuser bob", U), ("runuser -u bob ls -l x", U),
        ("sg staff -c 'touch p'", "{sg,touch} *"), ("sg staff 'touch p; ls'", "{ls,sg,touch} *"), ("sg staff", U),
        ("pkexec rm x", "{pkexec,rm} *"), ("pkexec --user bob git status", "{git,pkexec} *"), ("pkexec", U), ("pkexec --bogus rm", U),
        ("setpriv --reuid=1000 --regid=1000 --init-groups git status", "{git,setpriv} *"), ("setpriv --nnp rm x", "{rm,setpriv} *"),
        ("setpriv -d", "setpriv *"), ("setpriv --reu=1000 rm", U), ("setpriv --bogus rm", U),
        ("unshare -r rm x", "{rm,unshare} *"), ("unshare --map-root-user --net git status", "{git,unshare} *"), ("unshare -m", U),
        ("unshare --root /tmp/r ls", "{ls,unshare} *"), ("unshare --map-r rm", U), ("unshare -Z rm", U),
        ("nsenter -t 1 -m -u rm x", "{nsenter,rm} *"), ("nsenter --target 1 --mount git status", "{git,nsenter} *"), ("nsenter -t 1 -a", U),
        ("nsenter -t1 -m rm", "{nsenter,rm} *"), ("nsenter --tar 1 rm", U),
        ("chroot /mnt", U), ("chroot --userspec bob /mnt ls", "{chroot,ls} *"), ("chroot --user bob /mnt ls", "{chroot,ls} *"),
        ("systemd-run --user --scope make", "{make,systemd-run} *"), ("systemd-run -p MemoryMax=1G make", "{make,systemd-run} *"),
        ("systemd-run -p ExecStartPre=/bin/touch make", U), ("systemd-run -E LD_PRELOAD=x make", U), ("systemd-run --shell", U),
        ("systemd-run --unit x rm y", "{rm,systemd-run} *"), ("systemd-run --prop ExecStartPre=x make", U),
        ("bwrap --ro-bind / / --dev /dev git status", "{bwrap,git} *"), ("bwrap --bind / / --setenv PATH /tmp ls", U),
        ("bwrap --args 3 ls", U), ("bwrap --setenv FOO 1 --ro-bind / / rm x", "{bwrap,rm} *"), ("bwrap --bogus ls", U),
        ("firejail git status", U), ("firejail --noprofile rm x", U),
        ("gdb --args ./prog -x", "{./prog,gdb} *"), ("gdb -q -ex run --args rm x", "{gdb,rm} *"), ("gdb ./prog", "gdb *"), ("gdb --weird --args rm", U),
        ("sudo -u bob -- git status", "{git,sudo} *"), ("sudo --user=bob git status", "{git,sudo} *"), ("sudo --us bob git", U),
        ("sudo -s", U), ("sudo -i", U), ("sudo -i 'touch p'", "{sudo,touch} *"), ("sudo -l", "sudo *"), ("sudo -x rm", U),
        ("sudo -hhost rm x", "{rm,sudo} *"), ("doas -u bob git status", "{doas,git} *"), ("doas -s", U), ("doas -x rm", U),
        # transparent additions
        ("prlimit --nofile=1024 make", "make *"), ("prlimit -n1024 make", "make *"), ("prlimit -n 1024 make", "1024 *"),
        ("prlimit -p 1", "prlimit *"), ("prlimit --bogus make", U),
        ("numactl --interleave=all make", "make *"), ("numactl -N 0 -m 0 make", "make *"), ("numactl --show", "numactl *"), ("numactl --bogus make", U),
        ("cgexec -g cpu:grp make", "make *"), ("cgexec -g cpu:grp --sticky git status", "git *"), ("cgexec -x make", U),
        ("catchsegv ./prog", "./prog *"), ("valgrind --leak-check=full ./prog", "./prog *"), ("valgrind -q --tool=memcheck rm x", "rm *"),
        ("valgrind --db-command='touch p' ./prog", U), ("valgrind -x ./prog", U),
        ("fakeroot make install", "make *"), ("fakeroot -- make", "make *"), ("fakeroot -l /tmp/x.so make", U), ("fakeroot --faked /tmp/x make", U),
        ("faketime '2020-01-01' date", "date *"), ("faketime -f '+1d' date", "date *"), ("faketime --date-prog /tmp/x 2020 date", U),
        ("eatmydata apt-get install x", "apt-get *"), ("eatmydata -- make", "make *"), ("eatmydata -x make", U),
        ("torsocks curl x", "curl *"), ("torsocks -i curl x", "curl *"), ("torsocks --shell", U), ("torsocks on", "torsocks *"),
        ("torsocks -u bob -p pw curl x", "curl *"),
        ("proxychains curl x", "curl *"), ("proxychains4 -q -f /etc/p.conf curl x", "curl *"), ("proxychains -x curl", U),
        ("unbuffer make", "make *"), ("unbuffer -p grep x", "grep *"), ("rlwrap sqlite3 db", "sqlite3 *"), ("rlwrap -z filter sqlite3", U),
        ("find ~ -name x", "find *"), ("find ~/src ~root -delete", "find *"), ("find ~/$x -delete", U), ("find ~/* -delete", U),
        ("find ~ -exec rm {} +", "{find,rm} *"),
        ("rlwrap -c -H hist sqlite3", "sqlite3 *"), ("strace -N git status", "git *"), ("fakeroot -f /tmp/faked make", U),
        ("unshare -mR git touch p", "{touch,unshare} *"), ("unshare -mn git status", "{git,unshare} *"), ("nsenter -t 1 -N 3 rm", "{nsenter,rm} *"),
        ("caffeinate -i make", "make *"), ("caffeinate -t 10 git status", "git *"), ("caffeinate -x make", U),
        ("sudo -h git touch p", U), ("sudo -h", "sudo *"),
        ("env a-b=c touch p", "touch *"), ("env ./x=y touch p", "touch *"), ("env A=1 B=$x git", U),
        ("sudo A=1 -s touch p", "{sudo,touch} *"), ("sudo a-b=c touch p", "{sudo,touch} *"), ("sudo A=1 -u bob B=2 git status", "{git,sudo} *"),
        ("sudo A=1 LD_PRELOAD=x git", U), ("sudo x-y=1 PATH=/tmp git", U), ("sudo A=1 -x git", U),
        ("watch -g touch p", "touch *"), ("watch -s /tmp/d ls", "ls *"), ("su -T -c 'touch p'", "{su,touch} *"), ("nice nohup setsid -f ionice -c3 taskset -c 0 chrt -b 0 git status", "git *"),
    ]:
    add(c, e)
# Fail closed by construction: a word decides only when it is one literal word after
# every expansion. Brace expansion and globs assembled from quoted and unquoted pieces:
for c, e in [('timeout {"5",rm,-rf} git', U), ("find . {-exec,rm,-rf,x,\\;}", U), ('nice -n {"5",rm} git', U),
             ('env -u {"X",rm} git', U), ('xargs -n {"1",rm} git', U), ('stdbuf -o{"L",rm} git', U), ('ionice -c {"3",rm} git', U),
             ('taskset -c {"0",rm} git', U), ('flock {"f",rm} git', U), ('chrt -b {"0",rm} git', U), ('timeout -s {"KILL",rm} 5 git', U),
             ('bash {"-c","rm x"}', U), ("sh {'-c','rm x'}", U), ('e{cho,x} hi', U), ('git log --format={a,b}', "git *"),
             ("find . -name '{a,b}'", "find *"), ("timeout 5 git {a,b}", "git *"), ("find . -exec rm {} \\;", "{find,rm} *"),
             ('export {PATH,X}=/tmp; git status', U), ('export PAT?=/tmp; git status', U), ('printf -v "$n" x', U), ('printf "$f" x', U),
             ("find . -maxdepth 0 [\"-\"]exec rm -rf x \\;", U), ("sh [\"-\"]c 'rm -rf ~'", U), ("sh [-]c 'rm x'", U),
             ("find . -name \"*.rs\"", "find *"), ("bash -c 'ls' [x]", "ls *"), ("git add [\"-\"]A", "git *"),
             ("env A=~ git status", U), ("timeout --kill-after=~ 5 git", U)]:
    add(c, e, "word decided only when literal after every expansion")
# Shell option parsing: bundles, -o/-O values, long options, other shells.
for c, e in [("sh -oo errexit nounset -c 'rm -rf ~'", "rm *"), ("sh -o errexit -c 'rm x'", "rm *"), ("bash -o bogus -c 'rm x'", U),
             ("bash -O extglob -c 'ls'", U), ("bash -O nullglob -c 'ls'", "ls *"), ("bash -k -c 'ls'", U), ("bash -xe -c 'ls'", "ls *"),
             ("bash -ec 'rm x'", "rm *"), ("bash --norc -c 'ls'", "ls *"), ("bash -x --norc -c 'ls'", U), ("sh --norc -c 'ls'", U),
             ("bash -o history -c 'ls'", U), ("bash -oo errexit -c 'rm x'", U),
             ("zsh --emulate sh -c 'rm x'", U), ("zsh --emulate sh -f -c 'rm x'", "rm *"), ("zsh --emulate csh -f -c 'rm x'", U),
             ("rbash -c 'rm -rf x'", "rm *"), ("echo 'rm x' | rbash", U), ("rbash <<< 'rm x'", "rm *"),
             ("fish -c 'rm x'", U), ("fish -N -c 'rm x'", "rm *"), ("fish <<< 'rm x'", U), ("echo 'rm x' | fish", U),
             ("dash -oo errexit nounset \"-\"\"c\" 'touch p'", "touch *"), ("sh -e {\"-c\",p} 'git x'", U),
             ("find . -maxdepth 0 {\"-exec\",p} cat p \\;", U), ("bash -x \\-\\c 'ls'", "ls *"),
             ("tcsh -c 'ls'", U), ("csh -c ls", U), ("ksh93 -c 'ls'", U), ("pwsh -c ls", U), ("busybox sh -c 'rm x'", "rm *")]:
    add(c, e, "shell options are read as the shell reads them")
# Wrapper options that set variables in the wrapped command's environment.
for c, e in [("xargs --process-slot-var=BASH_ENV bash -c 'git status'", U), ("xargs --process-slot-var BASH_ENV git status", U),
             ("xargs --process-slot-var=SLOT git status", "git *"), ("xargs --process-slot-var=LD_PRELOAD git", U),
             ("env -u PATH git status", U), ("env -u FOO git status", "git *"), ("strace -E LD_PRELOAD=x git", U),
             ("systemd-run -E BASH_ENV=x bash -c ls", U), ("bwrap --unsetenv PATH git", U)]:
    add(c, e, "wrapper options that set risky variables")
# Startup files a shell reads before its code.
for c, e in [("zsh -c 'git status'", U), ("zsh -f -c 'git status'", "git *"), ("zsh -d -c 'ls'", U), ("echo ls | zsh", U),
             ("fish -c 'git status'", U), ("sh -i -c 'ls'", U), ("dash -l -c ls", U), ("zsh script.zsh", "zsh *")]:
    add(c, e, "startup files")
# Locale: the character set a shell reads its code in.
for c, e in [("LC_ALL=zh_CN.GBK bash -c 'git status'", U), ("LC_ALL=C sort f", "sort *"), ("LANG=en_US.UTF-8 git status", "git *"),
             ("LC_ALL=C.UTF-8 git log", "git *"), ("LOCPATH=/tmp/l git status", U), ("env LC_CTYPE=zh_TW.BIG5 bash -c 'ls'", U),
             ("export LC_ALL=GB18030; bash -c ls", U), ("LC_ALL=$x git status", U), ("sudo LANG=ja_JP.SJIS git", U),
             ("NLSPATH=/tmp/%N git", U), ("LC_ALL=./x git status", U), ("env LANG=C git status", "git *")]:
    add(c, e, "locale variables")
# A syntax check runs nothing; translation catalogs; wrappers that change directory.
add("bash -n -c 'rm -rf ~'", 'bash *', 'a syntax check runs nothing')
add("bash -nc 'rm x'", 'bash *', 'a syntax check runs nothing')
add("bash -c -n 'rm x'", 'bash *', 'a syntax check runs nothing')
add_in('posix', "sh -n -c 'rm x'", 'sh *', 'a syntax check runs nothing')
add("dash -o noexec -c 'rm x'", 'dash *', 'a syntax check runs nothing')
add("bash -eo noexec -c 'rm x'", 'bash *', 'a syntax check runs nothing')
add("bash -n -c 'set +n; rm x'", 'bash *', 'set +n is a command, which a syntax check does not run')
add("bash -n +n -c 'rm x'", 'rm *', 'the last of -n and +n counts')
add("bash -o noexec +o noexec -c 'rm x'", 'rm *', 'the last of -n and +n counts')
add("bash -n -o noexec +n -c 'rm x'", 'rm *', 'the last of -n and +n counts')
add("bash -n -i -c 'rm x'", '{unknown}', 'an interactive shell ignores -n')
add("echo 'rm x' | bash -n", '{unknown}', 'on a terminal bash -n is interactive and ignores -n')
add("zsh -f -n -c 'rm x'", 'rm *', "zsh's -n is not followed: analysed as if it ran")
add("bash -n -c 'rm x' $(touch p)", '{bash,touch} *', 'the outer shell still runs the substitution')
add('TEXTDOMAINDIR=. TEXTDOMAIN=x LC_ALL=C.UTF-8 bash -c \'echo $"hi"\'', '{unknown}', 'a message catalog the command wrote translates $"..." into code')
add('export TEXTDOMAINDIR=./po; echo $"hi"', '{unknown}', 'a message catalog the command wrote translates $"..." into code')
add('env TEXTDOMAIN=x bash -c \'echo $"hi"\'', '{unknown}', 'a message catalog the command wrote translates $"..." into code')
add('LANGUAGE=../../x git status', '{unknown}', 'LANGUAGE names the catalog directory')
add('env -C / rm -rf x', 'rm *', 'a directory for the classifier, the same pattern')
add('busybox --list', 'busybox *')
add('busybox ls -l', 'ls *')
add('builtin -- echo x', 'echo *')
add('proxychains -qf x touch p', '{unknown}', 'proxychains compares whole words: -qf is -q, then x is the program')
add('proxychains -q -f cfg git fetch', 'git *')
add('pkexec --user root git status', '{git,pkexec} *')
add('pkexec', '{unknown}')
add('bwrap --ro-bind / / --chdir / --setenv FOO 1 git status', '{bwrap,git} *')
add('bwrap --ro-bind / / --setenv BASH_ENV x bash -c ls', '{unknown}')
add('bwrap --bind / git status', '{bwrap,status} *', '--bind takes two words: `git` is its second, `status` the program')
add('systemd-run -p MemoryMax=1G git status', '{git,systemd-run} *')
add('systemd-run -p ExecStartPre=/bin/touch git status', '{unknown}')
add('watch -n1 git status', 'git *')
add('watch -x git status', 'git *')
add("flock f -c 'git status; rm x'", '{git,rm} *')
add('flock -n f git status', 'git *')
add("script -qc 'git log' out.txt", 'git *')
add("script -c'git log'", '{unknown}')
add('nice -10 git gc', 'git *')
add('nice --adjustment=5 -- git gc', 'git *')
add('exec -a myname git status', 'git *')
add('exec -a -bash bash -c ls', '{unknown}')
add('exec -l bash -c ls', '{unknown}')
add('eatmydata -- apt-get install x', 'apt-get *')
add('eatmydata -x apt-get install x', '{unknown}')
# sh has no time keyword: the program time runs its first word, an assignment in bash, as a command
for c, e in [("time a=b p", U), ("time -p a=b p", U), ("time path=bin | git x", U), ("time >f a=b p", U),
             ("time git status", "git *"), ("time -p make", "make *")]:
    add_in("unknown", c, e, "time before an assignment")
    add_in("posix", c, e, "time before an assignment")
for c, e in [("time a=b p", "p *"), ("\\time a=b p", "a=b *"), ("command time a=b p", "a=b *"), ("'time' a=b p", "a=b *")]:
    add(c, e, "time before an assignment")
with open("tests/data/permission_corpus.jsonl", "w") as f:
    for e in E:
        f.write(json.dumps(e, ensure_ascii=False) + "\n")
print(len(E))
