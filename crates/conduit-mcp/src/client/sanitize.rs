//! Server text made safe for a terminal.
//!
//! Everything a server sends (tool names and descriptions, results, task ids,
//! status and error messages, elicitation forms) may carry escape sequences
//! that set the window title, write the clipboard (OSC 52), erase lines, hide
//! text or reorder it (bidirectional overrides). A program that prints server
//! text passes it through [`terminal_safe`] (multi-line text) or
//! [`one_line`] (a name, an id, a status line) first: control characters are
//! shown escaped (`\x1b`, `\u{202e}`) instead of acting.

use std::borrow::Cow;

/// Whether `c` would act on a terminal instead of being shown: C0 and C1
/// controls, DEL, and the bidirectional and zero-width format characters.
fn acts(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| acts(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !acts(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// Multi-line server text for a terminal: newlines and tabs kept, every other
/// control or format character shown escaped.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// Server text for one line of a terminal: every control character, newlines
/// included, shown escaped (a server cannot start a line of its own).
pub fn one_line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// Server text for one line of an error message: as [`one_line`], cut after
/// `max` characters (an ellipsis and the whole length in bytes mark the cut),
/// so one value a server sends cannot fill a terminal or a log line.
pub fn excerpt(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => one_line(s),
        Some((at, _)) => Cow::Owned(format!("{}… ({} bytes)", one_line(&s[..at]), s.len())),
    }
}

/// How much of one server value the client's error messages show.
pub(crate) const ERROR_EXCERPT: usize = 200;

/// Server text (a URL, a name, a value) inside an error message: an
/// [`excerpt`] of [`ERROR_EXCERPT`] characters.
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    excerpt(s, ERROR_EXCERPT)
}

/// Server text in an error message: an [`excerpt`] of [`ERROR_EXCERPT`]
/// characters in double quotes, escaped once.
pub(crate) fn quoted(s: &str) -> String {
    format!("\"{}\"", excerpt(s, ERROR_EXCERPT))
}

/// JSON text with the characters [`terminal_safe`] escapes written as
/// `\uXXXX` escapes (still the same JSON value): `serde_json` leaves DEL, C1
/// controls and bidirectional overrides raw.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| acts(c) && c != '\n') {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if acts(c) && c != '\n' {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_acts() {
        assert_eq!(terminal_safe("plain\ttext\nline"), "plain\ttext\nline");
        assert_eq!(terminal_safe("\x1b]0;owned\x07x"), "\\x1b]0;owned\\x07x");
        assert_eq!(terminal_safe("a\u{9b}2Kb"), "a\\x9b2Kb");
        assert_eq!(one_line("id\r\n\u{202e}x"), "id\\x0d\\x0a\\u{202e}x");
        let j = serde_json::to_string(&serde_json::json!({ "t": "\u{9b}\u{202e}\x1b" })).unwrap();
        let safe = json_safe(&j);
        assert!(!safe.chars().any(acts), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap()["t"], "\u{9b}\u{202e}\x1b");
    }

    #[test]
    fn excerpts_are_cut_and_escaped_once() {
        assert_eq!(excerpt("short\x1b", 10), "short\\x1b");
        assert_eq!(excerpt(&"é".repeat(300), 3), "ééé… (600 bytes)");
        assert_eq!(quoted("\x1b]0;MAC"), "\"\\x1b]0;MAC\"");
    }
}
