/*
 * cmd_completion.c - `larkctl completion bash`: a bash completion script.
 *
 *   source <(larkctl completion bash)
 *
 * It completes commands, their subcommands and flags, the kinds get and
 * describe take (from the table in kinds.c; get also lark-engine's stages
 * and peers, which name Jobs), -o's forms, and resource names: `larkctl get
 * KIND -o name`, asked with the --data, --url and
 * --creds typed so far, when a data directory or $LARK_URL is there to
 * reach. It needs nothing of the bash-completion package. The build
 * installs it where bash-completion looks (CMake's install step,
 * ops/setup).
 */
#include <stdio.h>
#include <string.h>

#include "kinds.h"

#define USAGE "larkctl completion bash"

/* Each command's words after it: the flags it takes. */
static const char *const flags[][2] = {
    {"up", "--nodes --port --cluster --listen --relay --pod-cidr --domain "
           "--device-file --gateway-port --no-gateway"},
    {"init", "--replicas --dedupe"},
    {"status", "--wait"},
    {"tail", "--from-seq --since --type --follow"},
    {"emit", "--data"},
    {"logs", "-f --since --tail --timestamps"},
    {"get", "--at --limit -w --watch --cluster"},
    {"describe", "--at --limit"},
    {"apply", "-f --dry-run"},
    {"delete", "-f"},
    {"wait", "--for --timeout --interval"},
    {"robot", "--mode --force"},
    {"camera", "-o --timeout"},
    {"replay", "--until-seq --until --from-snapshot --out --verify"},
    {"snapshot", "--out"},
    {"cert", "--role --name --domain --cluster --agent --out --valid "
             "--reason"},
};

static const char script_head[] =
    "# bash completion for larkctl (larkctl completion bash)\n"
    "_larkctl_names() {\n"
    "  local data=\"${_larkctl_data:-${LARK_DATA:-./.lark}}\"\n"
    "  [[ -n $_larkctl_url || -n $LARK_URL || -d $data ]] || return 0\n"
    "  local -a opts=()\n"
    "  [[ -n $_larkctl_data ]] && opts+=(--data \"$_larkctl_data\")\n"
    "  [[ -n $_larkctl_url ]] && opts+=(--url \"$_larkctl_url\")\n"
    "  [[ -n $_larkctl_creds ]] && opts+=(--creds \"$_larkctl_creds\")\n"
    "  LARK_JS_WAIT_MS=${LARK_JS_WAIT_MS:-1000} \\\n"
    "    \"${_larkctl_bin:-larkctl}\" \"${opts[@]}\" get \"$1\" -o name "
    "2>/dev/null | sed 's|^[^/]*/||'\n"
    "}\n\n"
    "_larkctl() {\n"
    "  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
    "  local prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
    "  local cmd=\"\" i w\n"
    "  local -a args=()\n"
    "  _larkctl_data=\"\" _larkctl_url=\"\" _larkctl_creds=\"\"\n"
    "  _larkctl_bin=\"${COMP_WORDS[0]}\"\n"
    "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    "    w=\"${COMP_WORDS[i]}\"\n"
    "    case \"$w\" in\n"
    "    --data) [[ $cmd == emit ]] || _larkctl_data=\"${COMP_WORDS[i+1]}\"\n"
    "      ((i++)) ;;\n"
    "    --url) _larkctl_url=\"${COMP_WORDS[i+1]}\"; ((i++)) ;;\n"
    "    --creds) _larkctl_creds=\"${COMP_WORDS[i+1]}\"; ((i++)) ;;\n"
    "    -o | --output | --at | --limit | --since | --type | --from-seq | "
    "--for | --timeout | --interval | --until | --until-seq | --out | "
    "--role | --name | --domain | --cluster | --nodes | --port | --wait | "
    "--tail | --reason | --replicas | --dedupe | --valid | --agent | "
    "--listen | --pod-cidr | --from-snapshot | --mode) ((i++)) ;;\n"
    "    -f) [[ $cmd == logs ]] || ((i++)) ;;\n"
    "    -*) ;;\n"
    "    *) if [[ -z $cmd ]]; then cmd=\"$w\"; else args+=(\"$w\"); fi ;;\n"
    "    esac\n"
    "  done\n"
    "  case \"$prev\" in\n"
    "  -o | --output)\n"
    "    if [[ $cmd == camera ]]; then COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    "    else COMPREPLY=($(compgen -W \"json yaml wide name\" -- \"$cur\"))\n"
    "    fi\n"
    "    return ;;\n"
    "  --data | --creds | -f | --out | --from-snapshot)\n"
    "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    "    return ;;\n"
    "  esac\n";

/* The kinds get and describe take: every row's names. */
static void
print_kinds(void) {
  printf("  local kinds=\"");
  for (size_t i = 0;; i++) {
    const cli_kind *k = cli_kind_at(i);
    if (!k)
      break;
    printf("%s%s %s%s%s", i ? " " : "", k->kind, k->plural,
           k->shortname ? " " : "", k->shortname ? k->shortname : "");
  }
  printf("\"\n");
}

static void
print_flags(void) {
  printf("  local flags=\"--url --creds --data -o -v\"\n"
         "  case \"$cmd\" in\n");
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    printf("  %s) flags+=\" %s\" ;;\n", flags[i][0], flags[i][1]);
  printf("  esac\n"
         "  if [[ $cur == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n");
}

static const char script_tail[] =
    "  local words=\"\"\n"
    "  case \"$cmd\" in\n"
    "  \"\") words=\"apply camera cert completion cordon delete describe emit "
    "get "
    "help init logs node replay resume robot site snapshot status stop tail "
    "uncordon "
    "up version wait\" ;;\n"
    "  get | describe)\n"
    "    if ((${#args[@]} == 0)); then words=\"$kinds\"\n"
    "      [[ $cmd == get ]] && words+=\" stages peers\"\n"
    "    elif ((${#args[@]} == 1)); then\n"
    "      case \"${args[0]}\" in\n"
    "      stage | stages | peer | peers) words=\"$(_larkctl_names job)\" ;;\n"
    "      *) words=\"$(_larkctl_names \"${args[0]}\")\" ;;\n"
    "      esac\n"
    "    fi ;;\n"
    "  delete | stop | resume | wait)\n"
    "    if ((${#args[@]} == 0)); then\n"
    "      case \"$cmd\" in\n"
    "      delete) words=\"job workflow node domain\" ;;\n"
    "      stop | resume) words=\"job workflow\" ;;\n"
    "      *) words=\"job workflow task pod node\" ;;\n"
    "      esac\n"
    "    else words=\"$(_larkctl_names \"${args[0]}\")\"; fi ;;\n"
    "  cordon | uncordon)\n"
    "    if ((${#args[@]} == 0)); then words=\"node\"\n"
    "    else words=\"$(_larkctl_names node)\"; fi ;;\n"
    "  logs)\n"
    "    if ((${#args[@]} == 0)); then words=\"job task pod\"\n"
    "    else words=\"$(_larkctl_names \"${args[0]}\")\"; fi ;;\n"
    "  emit) ((${#args[@]} == 0)) && words=\"$(_larkctl_names job)\" ;;\n"
    "  replay | snapshot)\n"
    "    ((${#args[@]} == 0)) && words=\"catalog scheduler dag ipam signer "
    "logs devices engine\" ;;\n"
    "  cert) ((${#args[@]} == 0)) && words=\"request revoke list show ca\" "
    ";;\n"
    "  node)\n"
    "    if ((${#args[@]} == 0)); then words=\"add list rotate\"\n"
    "    elif [[ ${args[0]} == rotate ]]; then words=\"$(_larkctl_names "
    "node)\"; fi ;;\n"
    "  site) ((${#args[@]} == 0)) && words=\"add list\" ;;\n"
    "  robot)\n"
    "    if ((${#args[@]} == 0)); then\n"
    "      words=\"start stop reset mode status modes\"\n"
    "    elif ((${#args[@]} == 1)); then words=\"$(_larkctl_names device)\"; "
    "fi ;;\n"
    "  camera)\n"
    "    if ((${#args[@]} == 0)); then words=\"capture\"\n"
    "    elif ((${#args[@]} == 1)); then words=\"$(_larkctl_names device)\"; "
    "fi ;;\n"
    "  completion) ((${#args[@]} == 0)) && words=\"bash\" ;;\n"
    "  esac\n"
    "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "}\n\n"
    "complete -F _larkctl larkctl\n";

int
cmd_completion(int argc, char **argv, lark_cli *cli) {
  (void)cli;
  if (argc != 2 || strcmp(argv[1], "bash"))
    return cli_usage(USAGE);
  fputs(script_head, stdout);
  print_kinds();
  print_flags();
  fputs(script_tail, stdout);
  return CLI_OK;
}
