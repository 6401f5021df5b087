//! Secrets of the shapes an agent's turns carry, planted in a session to check that none of them
//! reaches a summarizer, whichever path (`compress`, `run`, lcm, `serve`) asks for a summary.

use serde_json::{json, Value};

/// Each planted text, and the part of it that must never leave.
pub const PLANTED: &[(&str, &str)] = &[
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGPLANTEDpgpKEYmaterial\n=x1y2\n-----END PGP PRIVATE KEY BLOCK-----",
        "PLANTEDpgpKEYmaterial",
    ),
    ("GITLAB_TOKEN=x glpat-PLANTEDgitlab01234567", "PLANTEDgitlab"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=PLANTEDazure+key/AA==;EndpointSuffix=core.windows.net",
        "PLANTEDazure",
    ),
    (
        "curl -H 'Authorization: Basic UExBTlRFRGJhc2ljOnB3' https://api.example.com",
        "UExBTlRFRGJhc2ljOnB3",
    ),
    (
        "mail via SG.PLANTEDsendgridID01.PLANTEDsendgridSECRET0123456789abcdef",
        "PLANTEDsendgrid",
    ),
    ("by the way my password is Pl4ntedProse!x", "Pl4ntedProse"),
    (
        "git remote add origin https://ada:PLANTED@tail/part@git.example.com/r.git",
        "tail/part",
    ),
    (
        "machine api.x.com login bob password PLANTEDnetrc",
        "PLANTEDnetrc",
    ),
    (
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&se=2030-01-01T00:00:00Z&sig=PLANTEDsasSig%2Bx%3D",
        "PLANTEDsasSig",
    ),
    ("twilio SK0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
];

/// Where the planted turns go: past the first messages every engine keeps verbatim, long before
/// the tail, so that any compression summarizes them.
const AT: usize = 6;

/// `messages` with each planted secret said by the user (and acknowledged) early on.
pub fn plant(messages: &mut Vec<Value>) {
    for (index, (secret, _)) in PLANTED.iter().enumerate() {
        messages.insert(
            AT + 2 * index,
            json!({"role": "user", "content": format!("note this: {secret}")}),
        );
        messages.insert(
            AT + 1 + 2 * index,
            json!({"role": "assistant", "content": "Noted."}),
        );
    }
}

/// Panics naming the first planted secret `sent` (what a summarizer received) holds.
pub fn assert_none_in(sent: &str, path: &str) {
    // The planted turns themselves were sent (their secrets masked): the check means something.
    assert!(
        sent.matches("note this").count() >= PLANTED.len(),
        "{path}: the planted turns were not summarized: {sent}"
    );
    for (secret, part) in PLANTED {
        assert!(
            !sent.contains(part),
            "{path}: {secret:?} reached the summarizer"
        );
    }
}
