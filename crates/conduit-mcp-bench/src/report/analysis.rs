//! The hand-written analysis: the text between [`ANALYSIS_BEGIN`] and
//! [`ANALYSIS_END`] is carried over from the previous file on every run.

/// Marks the start of the hand-written analysis kept across runs.
pub const ANALYSIS_BEGIN: &str = "<!-- analysis:begin -->";
/// Marks its end.
pub const ANALYSIS_END: &str = "<!-- analysis:end -->";

/// The analysis kept from `previous` (the old file), or a placeholder.
pub(super) fn analysis(previous: Option<&str>) -> String {
    let kept = previous.and_then(|p| {
        let start = p.find(ANALYSIS_BEGIN)? + ANALYSIS_BEGIN.len();
        let end = p[start..].find(ANALYSIS_END)? + start;
        Some(p[start..end].trim_matches('\n').to_owned())
    });
    let body = kept.unwrap_or_else(|| "_No analysis written yet._".into());
    format!("{ANALYSIS_BEGIN}\n{body}\n{ANALYSIS_END}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_analysis() {
        let old = format!("# x\n{ANALYSIS_BEGIN}\nhand written\n{ANALYSIS_END}\n");
        assert!(analysis(Some(&old)).contains("hand written"));
        assert!(analysis(None).contains("No analysis"));
        let doc = super::super::render(&crate::harness::Results::default(), Some(&old), "c.svg");
        assert!(doc.contains("hand written") && doc.contains("## Targets"));
    }
}
