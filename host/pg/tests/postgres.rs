//! Against a real server: connecting through a `RedactedUrl` with each driver, migrations
//! applied once each from either driver, and failures that name what failed without the
//! password.

use ctxhost_pg::migrate::{
    applied_version, applied_version_blocking, migrate, migrate_blocking, Migrated, Migration,
    MigrationError, Prerequisite, Schema,
};
use ctxhost_pg::{connector, describe, PostgresUrl, SslMode};
use ctxhost_redacted_url::RedactedUrl;
use ctxhost_test_postgres::Postgres;

const TWO: &[Migration] = &[
    Migration {
        version: 1,
        description: "the notes table",
        sql: "CREATE TABLE t_notes (id BIGINT PRIMARY KEY, text TEXT NOT NULL)",
    },
    Migration {
        version: 2,
        description: "notes carry a time",
        sql: "ALTER TABLE t_notes ADD COLUMN at BIGINT NOT NULL DEFAULT 0",
    },
];

fn schema(migrations: &'static [Migration]) -> Schema {
    Schema {
        component: "test",
        lock_key: 0x7465_7374,
        prerequisites: &[],
        migrations,
        upgrade: "upgrade the test",
    }
}

/// `url` with a password in its userinfo (the test server trusts every local connection, so
/// any password connects).
fn with_password(url: &str) -> RedactedUrl {
    RedactedUrl::new(url.replacen("postgres://postgres@", "postgres://postgres:hunter2@", 1))
}

fn blocking_client(url: &RedactedUrl) -> postgres::Client {
    let mode = url.ssl_mode().unwrap();
    postgres::Config::from(url.config().unwrap())
        .connect(connector(mode).unwrap())
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn async_client(url: &RedactedUrl) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mode = url.ssl_mode().unwrap();
    let (client, connection) = url
        .config()
        .unwrap()
        .connect(connector(mode).unwrap())
        .await?;
    tokio::spawn(connection);
    Ok(client)
}

#[test]
fn the_blocking_driver_migrates_once_and_refuses_a_newer_database() {
    let url = with_password(&Postgres::database("pg_blocking"));
    let mut client = blocking_client(&url);
    assert_eq!(
        migrate_blocking(&mut client, &schema(&TWO[..1])).unwrap(),
        Migrated { from: 0, to: 1 }
    );
    assert_eq!(
        migrate_blocking(&mut client, &schema(TWO)).unwrap(),
        Migrated { from: 1, to: 2 }
    );
    assert_eq!(
        migrate_blocking(&mut client, &schema(TWO)).unwrap(),
        Migrated { from: 2, to: 2 }
    );
    assert_eq!(applied_version_blocking(&mut client, "test").unwrap(), 2);
    assert_eq!(applied_version_blocking(&mut client, "other").unwrap(), 0);
    client
        .execute("INSERT INTO t_notes (id, text, at) VALUES (1, 'x', 5)", &[])
        .unwrap();
    let error = migrate_blocking(&mut client, &schema(&TWO[..1])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the database holds test schema version 2, newer than this build knows (1): \
         upgrade the test"
    );
}

#[test]
fn the_async_driver_migrates_the_same_way() {
    let url = with_password(&Postgres::database("pg_async"));
    runtime().block_on(async {
        let mut client = async_client(&url).await.unwrap();
        assert_eq!(applied_version(&client, "test").await.unwrap(), 0);
        assert_eq!(
            migrate(&mut client, &schema(TWO)).await.unwrap(),
            Migrated { from: 0, to: 2 }
        );
        assert_eq!(
            migrate(&mut client, &schema(TWO)).await.unwrap(),
            Migrated { from: 2, to: 2 }
        );
        assert_eq!(applied_version(&client, "test").await.unwrap(), 2);
    });
}

#[test]
fn a_failing_migration_keeps_nothing_and_says_which() {
    const BROKEN: &[Migration] = &[
        TWO[0],
        Migration {
            version: 2,
            description: "a column of a table that is not there",
            sql: "ALTER TABLE t_missing ADD COLUMN at BIGINT",
        },
    ];
    let url = with_password(&Postgres::database("pg_broken"));
    let mut client = blocking_client(&url);
    let error = migrate_blocking(&mut client, &schema(BROKEN)).unwrap_err();
    let MigrationError::Apply {
        version, reason, ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*version, 2);
    assert!(
        reason.contains("t_missing") && reason.contains("42P01"),
        "{reason}"
    );
    // The transaction rolled back: not even the first migration's table is there.
    assert_eq!(applied_version_blocking(&mut client, "test").unwrap(), 0);
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename = 't_notes'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}

#[test]
fn a_prerequisite_that_cannot_be_made_is_explained() {
    let url = with_password(&Postgres::database("pg_prerequisite"));
    let mut client = blocking_client(&url);
    let mut needy = schema(TWO);
    needy.prerequisites = &[Prerequisite {
        sql: "CREATE EXTENSION IF NOT EXISTS no_such_extension_here",
        needs: "the no_such_extension_here extension",
        remedy: "install it",
    }];
    let error = migrate_blocking(&mut client, &needy)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "the no_such_extension_here extension is needed and could not be created ("
        ) && error.ends_with("): install it"),
        "{error}"
    );
}

#[test]
fn misnumbered_migrations_are_refused_before_anything_runs() {
    const GAP: &[Migration] = &[
        TWO[0],
        Migration {
            version: 3,
            ..TWO[1]
        },
    ];
    let url = with_password(&Postgres::database("pg_gap"));
    let mut client = blocking_client(&url);
    let error = migrate_blocking(&mut client, &schema(GAP)).unwrap_err();
    assert!(
        matches!(
            error,
            MigrationError::Misnumbered {
                position: 2,
                version: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(applied_version_blocking(&mut client, "test").unwrap(), 0);
}

#[test]
fn sslmode_decides_whether_tls_is_asked_for() {
    // The test server has no TLS: `prefer` falls back to plain text, `require` cannot connect.
    let plain = Postgres::database("pg_tls");
    for (mode, connects) in [
        ("disable", true),
        ("allow", true),
        ("prefer", true),
        ("require", false),
        ("verify-ca", false),
        ("verify-full", false),
    ] {
        let url = with_password(&format!("{plain}?sslmode={mode}"));
        assert_eq!(url.ssl_mode().unwrap(), mode.parse::<SslMode>().unwrap());
        let outcome = runtime().block_on(async_client(&url));
        assert_eq!(outcome.is_ok(), connects, "sslmode={mode}");
        if let Err(error) = outcome {
            let text = describe(&error);
            assert!(text.contains("TLS"), "sslmode={mode}: {text}");
        }
    }
}

#[test]
fn a_refused_connection_is_described_without_the_password() {
    // The throwaway server trusts every local connection: the server's refusal here is of a
    // database that does not exist.
    let base = Postgres::database("pg_refused");
    let url = with_password(&format!("{}_absent?password=hunter3", base));
    let error = runtime()
        .block_on(async_client(&url))
        .expect_err("no such database");
    let text = describe(&error);
    assert!(
        text.contains("does not exist") && text.contains("3D000"),
        "{text}"
    );
    let shown = format!("{url}: {text}");
    assert!(!shown.contains("hunter"), "{shown}");
    assert!(shown.contains("postgres:***@127.0.0.1"), "{shown}");
    assert!(shown.contains("password=***"), "{shown}");
}
