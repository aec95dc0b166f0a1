//! Unit tests of the catalogue: naming modes, sanitising, lookup and filters.

use super::*;

struct Server {
    name: &'static str,
    available: bool,
    prefix: Option<&'static str>,
    allow: Vec<String>,
    deny: Vec<String>,
    tools: Vec<Tool>,
}

fn server(name: &'static str, tools: &[&str]) -> Server {
    Server {
        name,
        available: true,
        prefix: None,
        allow: Vec::new(),
        deny: Vec::new(),
        tools: tools.iter().map(|t| tool(t)).collect(),
    }
}

fn tool(name: &str) -> Tool {
    Tool {
        name: name.to_owned(),
        ..Tool::default()
    }
}

fn build(servers: &[Server], naming: &Naming) -> Catalogue {
    let input: Vec<ServerTools<'_>> = servers
        .iter()
        .map(|s| ServerTools {
            server: s.name,
            prefix: s.prefix,
            allow: &s.allow,
            deny: &s.deny,
            tools: &s.tools,
            source: None,
            available: s.available,
        })
        .collect();
    Catalogue::build(&input, naming, 7)
}

/// (catalogue name, server, original name) of every listed entry, in order.
fn listing(catalogue: &Catalogue) -> Vec<(String, String, String)> {
    catalogue
        .iter()
        .map(|e| (e.name.clone(), e.server.to_string(), e.tool.name.clone()))
        .collect()
}

fn row(name: &str, server: &str, tool: &str) -> (String, String, String) {
    (name.to_owned(), server.to_owned(), tool.to_owned())
}

/// (server, original name) that `name` leads to.
fn target(catalogue: &Catalogue, name: &str) -> Option<(String, String)> {
    catalogue
        .get(name)
        .map(|e| (e.server.to_string(), e.tool.name.clone()))
}

fn to(server: &str, tool: &str) -> Option<(String, String)> {
    Some((server.to_owned(), tool.to_owned()))
}

fn collision(name: &str, servers: &[&str]) -> Collision {
    Collision {
        name: name.to_owned(),
        servers: servers.iter().map(|s| Arc::from(*s)).collect(),
    }
}

fn files_and_web() -> Vec<Server> {
    vec![
        server("files", &["read", "search"]),
        server("web", &["search", "fetch"]),
    ]
}

fn all_namings() -> Vec<Naming> {
    let mut namings = Vec::new();
    for mode in [
        NamingMode::Conditional,
        NamingMode::Always,
        NamingMode::Never,
    ] {
        for separator in ["__", "-", ".", ""] {
            namings.push(Naming::new(mode).with_separator(separator));
        }
    }
    namings
}

#[test]
fn conditional_keeps_unique_names_and_prefixes_shared_ones() {
    let catalogue = build(&files_and_web(), &Naming::default());
    assert_eq!(
        listing(&catalogue),
        [
            row("read", "files", "read"),
            row("files__search", "files", "search"),
            row("fetch", "web", "fetch"),
            row("web__search", "web", "search"),
        ]
    );
    assert!(catalogue.collisions().is_empty());
    // The plain name is not a catalogue name; calling it says which servers share it.
    assert_eq!(
        catalogue.resolve("search"),
        Err(Unresolved::Ambiguous(collision(
            "search",
            &["files", "web"]
        )))
    );
    assert_eq!(catalogue.get("search"), None);
}

#[test]
fn module_example() {
    let mut servers = [
        server("files", &["read", "search", "my.tool/v2"]),
        server("web", &["fetch", "search"]),
    ];
    servers[1].prefix = Some("w");
    let catalogue = build(&servers, &Naming::default());
    assert_eq!(
        catalogue.iter().map(|e| &*e.name).collect::<Vec<_>>(),
        ["my_tool_v2", "read", "files__search", "fetch", "w__search"]
    );
    assert_eq!(target(&catalogue, "w__fetch"), to("web", "fetch"));
    assert_eq!(
        target(&catalogue, "files__my.tool/v2"),
        to("files", "my.tool/v2")
    );
}

#[test]
fn conditional_collides_on_sanitised_names() {
    let servers = [server("a", &["x.y"]), server("b", &["x_y"])];
    let catalogue = build(&servers, &Naming::default());
    assert_eq!(
        listing(&catalogue),
        [row("a__x_y", "a", "x.y"), row("b__x_y", "b", "x_y")]
    );
}

#[test]
fn always_prefixes_every_tool() {
    let catalogue = build(&files_and_web(), &Naming::new(NamingMode::Always));
    assert_eq!(
        listing(&catalogue),
        [
            row("files__read", "files", "read"),
            row("files__search", "files", "search"),
            row("web__fetch", "web", "fetch"),
            row("web__search", "web", "search"),
        ]
    );
    assert!(catalogue.collisions().is_empty());
    assert_eq!(catalogue.resolve("read"), Err(Unresolved::Unknown));
    assert_eq!(catalogue.resolve("search"), Err(Unresolved::Unknown));
}

#[test]
fn never_leaves_colliding_name_out_and_names_both_servers() {
    let catalogue = build(&files_and_web(), &Naming::new(NamingMode::Never));
    assert_eq!(
        listing(&catalogue),
        [row("read", "files", "read"), row("fetch", "web", "fetch")]
    );
    assert_eq!(catalogue.len(), 2);
    assert_eq!(
        catalogue.collisions(),
        [collision("search", &["files", "web"])]
    );
    assert_eq!(
        catalogue.resolve("search"),
        Err(Unresolved::Ambiguous(collision(
            "search",
            &["files", "web"]
        )))
    );
    // Each colliding tool is still callable by its prefixed form, which is its name.
    let files = catalogue.resolve("files__search").expect("prefixed form");
    assert_eq!(
        (&*files.server, files.tool.name.as_str()),
        ("files", "search")
    );
    assert_eq!(files.name, "files__search");
    assert_eq!(target(&catalogue, "web__search"), to("web", "search"));
    assert_eq!(
        catalogue
            .for_server("web")
            .map(|e| &*e.name)
            .collect::<Vec<_>>(),
        ["fetch"]
    );
}

#[test]
fn prefixed_forms_resolve_in_every_mode() {
    for naming in all_namings() {
        let sep = &naming.separator;
        let catalogue = build(&files_and_web(), &naming);
        for (server, tool) in [
            ("files", "read"),
            ("files", "search"),
            ("web", "fetch"),
            ("web", "search"),
        ] {
            let alias = format!("{server}{sep}{tool}");
            assert_eq!(
                target(&catalogue, &alias),
                to(server, tool),
                "{alias} in {naming:?}"
            );
        }
        let plain = naming.mode != NamingMode::Always;
        assert_eq!(target(&catalogue, "read").is_some(), plain, "{naming:?}");
    }
}

#[test]
fn custom_separator_and_prefix() {
    let mut servers = files_and_web();
    servers[1].prefix = Some("w");
    let naming = Naming::default().with_separator("-");
    let catalogue = build(&servers, &naming);
    assert_eq!(
        listing(&catalogue),
        [
            row("read", "files", "read"),
            row("files-search", "files", "search"),
            row("fetch", "web", "fetch"),
            row("w-search", "web", "search"),
        ]
    );
    assert_eq!(target(&catalogue, "w-fetch"), to("web", "fetch"));
    // The server's name is not a prefix once a prefix is configured.
    assert_eq!(target(&catalogue, "web-search"), None);

    // A separator LLM APIs refuse is sanitised in names but accepted as written in calls.
    servers[1].prefix = Some("my web");
    let catalogue = build(
        &servers,
        &Naming::new(NamingMode::Always).with_separator("."),
    );
    assert_eq!(
        catalogue.iter().map(|e| &*e.name).collect::<Vec<_>>(),
        [
            "files_read",
            "files_search",
            "my_web_fetch",
            "my_web_search"
        ]
    );
    assert_eq!(target(&catalogue, "my web.fetch"), to("web", "fetch"));
    assert_eq!(target(&catalogue, "files.read"), to("files", "read"));
}

#[test]
fn sanitises_names_and_accepts_the_listed_form_prefixed() {
    let catalogue = build(&[server("files", &["my.tool/v2"])], &Naming::default());
    assert_eq!(
        listing(&catalogue),
        [row("my_tool_v2", "files", "my.tool/v2")]
    );
    assert_eq!(
        target(&catalogue, "files__my.tool/v2"),
        to("files", "my.tool/v2")
    );
    assert_eq!(
        target(&catalogue, "files__my_tool_v2"),
        to("files", "my.tool/v2")
    );
}

#[test]
fn long_names_are_shortened_with_a_hash() {
    let fits = "f".repeat(64);
    let long = format!("{}{}", "a".repeat(60), "bcdefghij");
    let catalogue = build(&[server("s", &[&fits, &long])], &Naming::default());
    let names: Vec<&str> = catalogue.iter().map(|e| &*e.name).collect();
    let shortened = format!("{}_{:08x}", &long[..55], names::stable_hash("s", &long, 0));
    assert_eq!(names, [&*shortened, &*fits]);
    assert_eq!(shortened.len(), 64);

    // Prefixing can push a name over the limit too.
    let catalogue = build(&[server("s", &[&fits])], &Naming::new(NamingMode::Always));
    let entry = catalogue.iter().next().expect("one entry");
    assert_eq!(
        entry.name,
        format!(
            "s__{}_{:08x}",
            "f".repeat(52),
            names::stable_hash("s", &fits, 0)
        )
    );
    // The unshortened prefixed form still resolves.
    assert_eq!(target(&catalogue, &format!("s__{fits}")), to("s", &fits));
}

#[test]
fn sanitising_into_an_equal_name_gets_a_hash() {
    // `a_b` is already a valid name and keeps it; `a.b` only became equal by sanitising.
    let catalogue = build(&[server("files", &["a.b", "a_b"])], &Naming::default());
    assert_eq!(
        listing(&catalogue),
        [
            row("a_b_179123ba", "files", "a.b"),
            row("a_b", "files", "a_b"),
        ]
    );
    // Neither is valid as listed: both are hashed.
    let catalogue = build(&[server("files", &["a.b", "a/b"])], &Naming::default());
    let names: Vec<&str> = catalogue.iter().map(|e| &*e.name).collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1]);
    assert!(
        names.iter().all(|n| n.starts_with("a_b_") && n.len() == 12),
        "{names:?}"
    );
    assert_eq!(catalogue.resolve("a_b"), Err(Unresolved::Unknown));
}

#[test]
fn colliding_prefixed_names_get_a_hash() {
    let servers = [server("a", &["b__c"]), server("a__b", &["c"])];
    let catalogue = build(&servers, &Naming::new(NamingMode::Always));
    let names: Vec<&str> = catalogue.iter().map(|e| &*e.name).collect();
    assert_eq!(
        names,
        [
            format!("a__b__c_{:08x}", names::stable_hash("a", "b__c", 0)),
            format!("a__b__c_{:08x}", names::stable_hash("a__b", "c", 0)),
        ]
    );
    // The shared prefixed form is not guessed at.
    assert_eq!(catalogue.get("a__b__c"), None);
}

#[test]
fn hash_suffix_is_stable() {
    // A fixed input and its fixed name: a change of hash function is caught here.
    let catalogue = build(
        &[server("files", &["my.tool", "my_tool"])],
        &Naming::default(),
    );
    assert_eq!(
        target(&catalogue, "my_tool_12b64103"),
        to("files", "my.tool")
    );
}

#[test]
fn hashed_name_meeting_a_listed_name_is_salted() {
    let servers = [
        server("files", &["my.tool", "my_tool"]),
        server("other", &["my_tool_12b64103"]),
    ];
    let catalogue = build(&servers, &Naming::default());
    assert_eq!(
        listing(&catalogue),
        [
            row("my_tool_e50a0598", "files", "my.tool"),
            row("my_tool", "files", "my_tool"),
            row("my_tool_12b64103", "other", "my_tool_12b64103"),
        ]
    );
}

#[test]
fn names_are_llm_safe_unique_and_round_trip() {
    let long = "x".repeat(80);
    let weird = [
        "read",
        "a.b",
        "a_b",
        "a/b",
        "",
        "é",
        "_",
        "-",
        "search",
        "b__c",
        "c",
        &long,
        "tool with spaces",
        "x_y_12b64103",
    ];
    let servers = [
        Server {
            prefix: Some("p.q"),
            ..server("a", &weird)
        },
        server("a__b", &weird),
        server("srv/ü", &weird),
        server("long-server-name-that-goes-on", &weird),
    ];
    for naming in all_namings() {
        let catalogue = build(&servers, &naming);
        let mut seen = HashSet::new();
        let everything = catalogue.entries.iter();
        for entry in everything {
            assert!(
                names::is_valid(&entry.name),
                "{:?} in {naming:?}",
                entry.name
            );
            assert!(
                seen.insert(entry.name.clone()),
                "{:?} twice in {naming:?}",
                entry.name
            );
            let found = catalogue.resolve(&entry.name).expect("round trip");
            assert_eq!(
                (&found.server, &found.tool.name),
                (&entry.server, &entry.tool.name)
            );
        }
        let expected = if naming.mode == NamingMode::Never {
            0
        } else {
            servers.len() * weird.len()
        };
        assert_eq!(catalogue.len(), expected, "{naming:?}");
        assert_eq!(
            catalogue.entries.len(),
            servers.len() * weird.len(),
            "{naming:?}"
        );
    }
}

#[test]
fn ordered_by_server_then_original_name() {
    let servers = [
        server("web", &["b", "a"]),
        server("files", &["z.z", "a", "m"]),
    ];
    let catalogue = build(&servers, &Naming::new(NamingMode::Always));
    assert_eq!(
        catalogue.iter().map(|e| &*e.name).collect::<Vec<_>>(),
        ["files__a", "files__m", "files__z_z", "web__a", "web__b"]
    );
    assert_eq!(
        catalogue
            .for_server("web")
            .map(|e| &*e.tool.name)
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
}

#[test]
fn allow_and_deny_filter_the_list() {
    let tools = ["get_user", "get_deleted_items", "put_user", "search"];
    let servers = [
        Server {
            allow: vec!["get_*".to_owned()],
            deny: vec!["*delete*".to_owned()],
            ..server("api", &tools)
        },
        Server {
            deny: vec!["search".to_owned()],
            ..server("other", &["search"])
        },
    ];
    let catalogue = build(&servers, &Naming::default());
    assert_eq!(listing(&catalogue), [row("get_user", "api", "get_user")]);
    // Left out by every name.
    for name in [
        "put_user",
        "api__put_user",
        "get_deleted_items",
        "api__get_deleted_items",
        "other__search",
    ] {
        assert_eq!(catalogue.resolve(name), Err(Unresolved::Unknown), "{name}");
    }
    assert!(tool_allowed(
        &servers[0].allow,
        &servers[0].deny,
        "get_user"
    ));
    assert!(!tool_allowed(
        &servers[0].allow,
        &servers[0].deny,
        "get_deleted_items"
    ));
}

#[test]
fn a_denied_tool_does_not_collide() {
    let servers = [
        server("files", &["search"]),
        Server {
            deny: vec!["*".to_owned()],
            ..server("web", &["search"])
        },
    ];
    for mode in [NamingMode::Conditional, NamingMode::Never] {
        let catalogue = build(&servers, &Naming::new(mode));
        assert_eq!(listing(&catalogue), [row("search", "files", "search")]);
        assert!(catalogue.collisions().is_empty());
    }
}

#[test]
fn a_tool_listed_twice_is_taken_once() {
    let mut first = tool("read");
    first.description = Some("first".to_owned());
    let mut files = server("files", &[]);
    files.tools = vec![first.clone(), tool("read")];
    let catalogue = build(&[files], &Naming::default());
    assert_eq!(catalogue.len(), 1);
    assert_eq!(catalogue.get("read").map(|e| &e.tool), Some(&first));
}

#[test]
fn unavailable_server_keeps_names_stable_but_offers_nothing() {
    let mut servers = files_and_web();
    servers[1].available = false;
    let catalogue = build(&servers, &Naming::default());
    // `search` is still prefixed: `web` will be back with it.
    assert_eq!(
        listing(&catalogue),
        [
            row("read", "files", "read"),
            row("files__search", "files", "search"),
        ]
    );
    for name in ["fetch", "web__fetch", "web__search"] {
        assert_eq!(catalogue.resolve(name), Err(Unresolved::Unknown), "{name}");
    }
    assert!(catalogue.for_server("web").next().is_none());
}

#[test]
fn same_entries_ignores_the_version() {
    let input = files_and_web();
    let a = build(&input, &Naming::default());
    let mut b = build(&input, &Naming::default());
    b.version = 8;
    assert!(a.same_entries(&b));
    let mut input = files_and_web();
    input[1].available = false;
    assert!(!a.same_entries(&build(&input, &Naming::default())));
    assert!(!a.same_entries(&build(&files_and_web(), &Naming::new(NamingMode::Always))));
    assert!(!a.same_entries(&Catalogue::default()));
    assert!(Catalogue::default().same_entries(&Catalogue::default()));
}

#[test]
fn empty_and_new() {
    let empty = Catalogue::default();
    assert!(empty.is_empty());
    assert_eq!(empty.version(), 0);
    assert_eq!(empty.resolve("x"), Err(Unresolved::Unknown));
    let catalogue = build(&files_and_web(), &Naming::default());
    assert_eq!(catalogue.version(), 7);
    assert_eq!(catalogue.len(), 4);
    assert!(!catalogue.is_empty());
}
