//! Task ids that start with `-`: a server may mint them (base64url), and the
//! CLI must take back any id it printed, as in `conduit-mcp task get URL
//! -x8f…`. Before clap parses, such an argument of `task get|wait|cancel`
//! and `watch` that is not one of the command's flags (nor a flag's value,
//! nor after `--`) is passed as `--task-id=ID`, a hidden option the
//! commands read after their positional ids. The rewrite reads the flags from
//! the command line's definition it is given (tested with the CLI's own in
//! `args.rs`), so this file knows no command but by name.

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

/// `args` with dash-leading task ids rewritten (other commands unchanged); `cli` is the
/// command line's definition, whose subcommands' flags are left as they are.
pub(crate) fn rewrite(cli: clap::Command, args: Vec<OsString>) -> Vec<OsString> {
    let strs: Vec<Option<&str>> = args.iter().map(|a| a.to_str()).collect();
    let path: Vec<&str> = match strs.get(1..3) {
        Some([Some("task"), Some(sub @ ("get" | "wait" | "cancel" | "forget"))]) => vec!["task", sub],
        Some([Some("watch"), _]) => vec!["watch"],
        _ => return args,
    };
    let mut cmd = cli;
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
