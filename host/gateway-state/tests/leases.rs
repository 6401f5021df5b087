//! Session leases among gateways on a real PostgreSQL: a gateway granted a session's turn
//! lease learns the revision its previous holder saved, however the two raced.

use std::time::Duration;

use ctxhost_config::serve::DatabaseSettings;
use ctxhost_gateway_state::record::{SessionKey, SessionRecord};
use ctxhost_gateway_state::store::{Claim, LeaseKind, PostgresStore, SessionStore};
use ctxhost_redacted_url::RedactedUrl;
use ctxhost_test_postgres::Postgres;

async fn replica(url: &str, name: &str) -> PostgresStore {
    PostgresStore::connect(
        &RedactedUrl::new(url.to_string()),
        &DatabaseSettings::default(),
        name.to_string(),
    )
    .await
    .expect("the store connects")
}

async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("a plain connection to the test server");
    tokio::spawn(connection);
    client
}

/// The previous holder saves the session, then lets go of its lease, while the next gateway is
/// already asking for it (its claim waits on the release in progress). The claim granted must
/// report the revision saved, or the next gateway serves a record it thinks current, answers,
/// and has its save refused: the turn is lost though the client got its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_granted_after_a_release_sees_the_revision_saved_before_it() {
    let url = Postgres::database("leases");
    let (first, second) = (replica(&url, "first").await, replica(&url, "second").await);
    let key = SessionKey {
        credential: "c".to_string(),
        name: "racing".to_string(),
    };
    let mut record = SessionRecord::new(key.clone(), "compressor".into(), "m".into(), 16_000);
    record.revision = 1;
    first.save(&record).await.unwrap();

    let lease = Duration::from_secs(30);
    let first_leases = first.coordination(lease);
    let Claim::Granted { .. } = first_leases.claim(&key, LeaseKind::Turn).await.unwrap() else {
        panic!("nobody held the lease");
    };
    // The first gateway's release, in progress: its row is locked until it commits.
    let mut releasing = raw_client(&url).await;
    let release = releasing.transaction().await.unwrap();
    release
        .execute(
            "DELETE FROM ctxhost_gateway_leases WHERE name = $1 AND kind = 'turn'",
            &[&key.name],
        )
        .await
        .unwrap();
    // The second gateway asks meanwhile: its claim waits on the locked row.
    let second_leases = second.coordination(lease);
    let claim = tokio::spawn({
        let key = key.clone();
        async move { second_leases.claim(&key, LeaseKind::Turn).await }
    });
    let watcher = raw_client(&url).await;
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND query LIKE '%ctxhost_gateway_leases%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            !claim.is_finished(),
            "the claim did not wait on the release"
        );
        tokio::task::yield_now().await;
    }
    // The first gateway's save lands, then its release.
    record.revision = 2;
    first.save(&record).await.unwrap();
    release.commit().await.unwrap();

    match claim.await.unwrap().unwrap() {
        Claim::Granted {
            stored_revision, ..
        } => assert_eq!(
            stored_revision,
            Some(2),
            "the grant reports the revision saved before the lease was let go"
        ),
        Claim::Held { holder } => panic!("the lease was let go, yet {holder} holds it"),
    }
}
