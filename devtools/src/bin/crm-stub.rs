//! The CRM stub on its own, for `make invoke`: upserts leads by external id
//! on CRM_ADDRESS (default 127.0.0.1:9101), `GET /leads` lists them, and
//! `POST`/`DELETE /faults` break and mend it. Runs until stopped.

use std::net::SocketAddr;

use devtools::crm_stub::CrmStub;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let raw = std::env::var("CRM_ADDRESS").unwrap_or_else(|_| "127.0.0.1:9101".to_owned());
    let Ok(address) = raw.parse::<SocketAddr>() else {
        eprintln!("crm-stub: CRM_ADDRESS must be host:port, not {raw:?}");
        std::process::exit(2);
    };
    let stub = match CrmStub::start_on(address, true).await {
        Ok(stub) => stub,
        Err(error) => {
            eprintln!("crm-stub: cannot listen on {address}: {error}");
            std::process::exit(1);
        }
    };
    println!("crm-stub: listening on http://{}", stub.address());
    let _ = tokio::signal::ctrl_c().await;
}
