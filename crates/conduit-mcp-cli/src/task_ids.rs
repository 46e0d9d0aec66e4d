//! Task ids that start with `-`: a server may mint them (base64url), and the
//! CLI must take back any id it printed, as in `conduit-mcp task get URL
//! -x8f…`. Before clap parses, such an argument of `task get|wait|cancel`
//! and `watch` that is not one of the command's flags (nor a flag's value,
//! nor after `--`) is passed as `--task-id=ID`, a hidden option the
//! commands read after their positional ids.

use clap::CommandFactory;
use std::collections::HashSet;
use std::ffi::OsString;

/// The hidden option's name.
pub(crate) const FLAG: &str = "task-id";

/// The flags of a subcommand: (names, names that take a value).
fn flags(cmd: &clap::Command) -> (HashSet<String>, HashSet<String>) {
    let (mut all, mut valued) = (HashSet::new(), HashSet::new());
    for a in cmd.get_arguments() {
        let takes = a.get_action().takes_values();
        let names = a.get_long_and_visible_aliases().unwrap_or_default().into_iter().map(|l| format!("--{l}"));
        let shorts = a.get_short_and_visible_aliases().unwrap_or_default().into_iter().map(|c| format!("-{c}"));
        for n in names.chain(shorts) {
            if takes {
                valued.insert(n.clone());
            }
            all.insert(n);
        }
    }
    all.extend(["--help", "-h"].map(str::to_owned));
    (all, valued)
}

/// `args` with dash-leading task ids rewritten (other commands unchanged).
pub(crate) fn rewrite(args: Vec<OsString>) -> Vec<OsString> {
    let strs: Vec<Option<&str>> = args.iter().map(|a| a.to_str()).collect();
    let path: Vec<&str> = match strs.get(1..3) {
        Some([Some("task"), Some(sub @ ("get" | "wait" | "cancel"))]) => vec!["task", sub],
        Some([Some("watch"), _]) => vec!["watch"],
        _ => return args,
    };
    let mut cmd = crate::args::Cli::command();
    for p in &path {
        let Some(sub) = cmd.find_subcommand(p).cloned() else { return args };
        cmd = sub;
    }
    let (known, valued) = flags(&cmd);
    let start = 1 + path.len();
    let mut out: Vec<OsString> = args[..start].to_vec();
    let mut value_next = false;
    let mut rest = args[start..].iter();
    for a in rest.by_ref() {
        let Some(s) = a.to_str() else {
            out.push(a.clone());
            continue;
        };
        if value_next {
            value_next = false;
            out.push(a.clone());
            continue;
        }
        if s == "--" {
            out.push(a.clone());
            break;
        }
        let name = s.split_once('=').map_or(s, |(n, _)| n);
        if s.starts_with('-') && s.len() > 1 && !known.contains(name) {
            out.push(format!("--{FLAG}={s}").into());
            continue;
        }
        value_next = valued.contains(s);
        out.push(a.clone());
    }
    out.extend(rest.cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Vec<String> {
        rewrite(args.iter().map(OsString::from).collect()).into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn dash_ids_become_the_hidden_option() {
        assert_eq!(
            run(&["c", "task", "get", "http://h/mcp", "-x8f_Q", "--json", "--timeout", "-1"]),
            ["c", "task", "get", "http://h/mcp", "--task-id=-x8f_Q", "--json", "--timeout", "-1"]
        );
        assert_eq!(
            run(&["c", "watch", "http://h/mcp", "a", "--b-c", "-h"]),
            ["c", "watch", "http://h/mcp", "a", "--task-id=--b-c", "-h"]
        );
        assert_eq!(run(&["c", "call", "http://h/mcp", "-x"]), ["c", "call", "http://h/mcp", "-x"]);
        assert_eq!(
            run(&["c", "task", "get", "--stdio", "-x", "--", "srv", "-y"]),
            ["c", "task", "get", "--stdio", "--task-id=-x", "--", "srv", "-y"]
        );
    }
}
