//! `receipts webhook-url`: what to paste into the sender's webhook
//! settings, for the stack's sender and mode. The secret is read and
//! printed only with `--show-secret` and to a terminal.

use std::io::Write;

use aws_config::SdkConfig;
use shared::Sender;

use super::smoke::{first_secret, query_escape, sender_and_auth, webhook_secret, SenderAuth};
use super::{run_error, Failed};
use crate::stack::{output, Stack};

/// `receipts webhook-url`: what to paste into the sender. The secret is
/// read and printed only with `--show-secret` and to a terminal.
pub(super) async fn webhook_url(
    config: &SdkConfig,
    stack: &Stack,
    show_secret: bool,
    to_terminal: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let (sender, auth) = sender_and_auth(stack)?;
    let secret = if show_secret && to_terminal {
        Some(webhook_secret(config, stack, &auth).await?)
    } else {
        None
    };
    let secret = secret.as_deref().and_then(first_secret);
    let _ = write!(out, "{}", paste_instructions(url, sender, &auth, secret));
    if show_secret && !to_terminal {
        return Err(Failed::Usage(
            "--show-secret prints the secret only to a terminal (not to a pipe or a file)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// What to paste into the sender's webhook settings, for the stack's mode:
/// the URL, with the secret where the mode puts it, or `<secret>` where it
/// is not to be shown.
pub fn paste_instructions(
    url: &str,
    sender: Sender,
    auth: &SenderAuth,
    secret: Option<&str>,
) -> String {
    let shown = |secret: Option<&str>| secret.map_or("<secret>".to_owned(), str::to_owned);
    let hint = if secret.is_none() {
        "\n(<secret>: run again with --show-secret, at a terminal, to print it)"
    } else {
        ""
    };
    let vendor = sender.profile().webhook_settings;
    match auth {
        SenderAuth::Query(param) => {
            let separator = if url.contains('?') { '&' } else { '?' };
            let value = secret.map_or("<secret>".to_owned(), query_escape);
            format!("paste into {vendor}:\n  {url}{separator}{param}={value}{hint}\n")
        }
        SenderAuth::Bearer => format!(
            "paste into {vendor}:\n  {url}\nwith the header\n  Authorization: Bearer {}{hint}\n",
            shown(secret)
        ),
        SenderAuth::Basic => format!(
            "paste into {vendor}:\n  {url}\nwith basic authentication, user:password {}{hint}\n",
            shown(secret)
        ),
        SenderAuth::Header(name) => format!(
            "paste into {vendor}:\n  {url}\nwith the header\n  {name}: {}{hint}\n",
            shown(secret)
        ),
        SenderAuth::StandardWebhooks => format!(
            "paste into {vendor}:\n  {url}\nand sign with the Standard Webhooks secret {}{hint}\n",
            shown(secret)
        ),
        // A sender that chooses its key (the stack's secret holds it), or
        // one that takes the secret the stack generated.
        SenderAuth::OwnSignature
            if sender
                .signature()
                .is_some_and(|own| own.key_chosen_by_sender) =>
        {
            format!(
            "paste into {vendor}:\n  {url}\nIt signs each delivery with its own key, which the \
             stack's webhook secret (WebhookSecretArn) must hold.\n"
            )
        }
        SenderAuth::OwnSignature => format!(
            "paste into {vendor}:\n  {url}\nwith the signing secret\n  {}{hint}\n",
            shown(secret)
        ),
        SenderAuth::None => format!("paste into {vendor}:\n  {url}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain HTML form's stack has no webhook secret: its URL alone,
    /// for the page's `<form action>`.
    #[test]
    fn a_browser_forms_stack_gives_its_url_and_no_secret() {
        let stack = crate::stack::Stack {
            name: "site".into(),
            outputs: Default::default(),
            parameters: [("Sender".to_owned(), "html".to_owned())].into(),
        };
        let (sender, auth) = sender_and_auth(&stack).unwrap();
        assert_eq!((sender, &auth), (Sender::Html, &SenderAuth::None));
        let url = "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/html";
        let shown = paste_instructions(url, sender, &auth, None);
        assert!(shown.contains(&format!("{url}\n")), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
    }

    #[test]
    fn paste_instructions_put_the_secret_where_the_mode_wants_it_or_a_placeholder() {
        let url = "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/staticforms";
        let query = SenderAuth::Query("token".into());
        let shown = paste_instructions(url, Sender::StaticForms, &query, Some("s3cret"));
        assert!(shown.contains(&format!("{url}?token=s3cret\n")), "{shown}");
        assert!(!shown.contains("--show-secret"), "{shown}");
        let hidden = paste_instructions(url, Sender::StaticForms, &query, None);
        assert!(
            hidden.contains(&format!("{url}?token=<secret>\n")),
            "{hidden}"
        );
        assert!(hidden.contains("--show-secret"), "{hidden}");
        let bearer = paste_instructions(url, Sender::StaticForms, &SenderAuth::Bearer, None);
        assert!(
            bearer.contains("Authorization: Bearer <secret>"),
            "{bearer}"
        );
        assert!(bearer.contains(&format!("  {url}\n")), "{bearer}");
        for sender in Sender::ALL {
            let Some(own) = sender.signature() else {
                continue;
            };
            let told = paste_instructions(url, sender, &SenderAuth::OwnSignature, Some("k"));
            assert!(told.contains(sender.profile().title), "{told}");
            if own.key_chosen_by_sender {
                assert!(
                    told.contains("its own key") && !told.contains("  k\n"),
                    "{told}"
                );
            } else {
                assert!(told.contains("signing secret\n  k\n"), "{told}");
            }
        }
    }
}
