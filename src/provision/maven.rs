//! A Maven repository: which one (the one Maven itself would use), an artifact's versions from
//! its `maven-metadata.xml`, and a version's jar with the repository's `.sha1` checksum, in
//! Maven's layout (`group/as/path/artifact/version/artifact-version.jar`).
//!
//! The repository is, in order: `DBDELTA_MAVEN_REPOSITORY`; a `<mirror>` of `central` in the
//! user's `~/.m2/settings.xml` or Maven's global `conf/settings.xml`; else the `central`
//! repository of the super POM inside Maven's own installation (`lib/maven-model-builder-*.jar`,
//! `org/apache/maven/model/pom-4.0.0.xml`). No repository host is written in dbdelta.
//! Must not: download or unpack jars (the cache does).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Artifact;
use super::checksum::{Checksum, decode_hex};

/// Maven's installation directory: `MAVEN_HOME`, else the directory above the `bin/mvn` found on
/// `PATH` (symlinks resolved).
fn maven_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("MAVEN_HOME") {
        return Some(PathBuf::from(h));
    }
    let path = std::env::var_os("PATH")?;
    let mvn = std::env::split_paths(&path)
        .map(|d| d.join("mvn"))
        .find(|p| p.is_file())?;
    let real = mvn.canonicalize().ok()?;
    Some(real.parent()?.parent()?.to_path_buf())
}

/// Does a `<mirrorOf>` pattern (`*`, `central`, `external:*`, comma lists, `!id`) cover the
/// `central` repository?
fn mirrors_central(pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split(',').map(str::trim).collect();
    if parts.contains(&"!central") {
        return false;
    }
    parts
        .iter()
        .any(|p| matches!(*p, "*" | "central" | "external:*" | "external:https:*"))
}

/// The URL of the first mirror of `central` in a settings file.
fn mirror_in(settings: &Path) -> Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(settings) else {
        return Ok(None);
    };
    let doc = roxmltree::Document::parse(&text)
        .with_context(|| format!("{} is not XML", settings.display()))?;
    let child = |n: roxmltree::Node<'_, '_>, name: &str| {
        n.children()
            .find(|c| c.has_tag_name(name))
            .and_then(|c| c.text())
            .map(|t| t.trim().to_string())
    };
    Ok(doc
        .descendants()
        .filter(|n| n.has_tag_name("mirror"))
        .find(|m| child(*m, "mirrorOf").is_some_and(|p| mirrors_central(&p)))
        .and_then(|m| child(m, "url")))
}

/// The `central` repository's URL in Maven's super POM.
fn super_pom_central(home: &Path) -> Result<Option<String>> {
    let lib = home.join("lib");
    let Ok(entries) = std::fs::read_dir(&lib) else {
        return Ok(None);
    };
    let Some(jar) = entries.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("maven-model-builder") && n.ends_with(".jar"))
    }) else {
        return Ok(None);
    };
    let file = std::fs::File::open(&jar).with_context(|| format!("opening {}", jar.display()))?;
    let mut zip =
        zip::ZipArchive::new(file).with_context(|| format!("reading {}", jar.display()))?;
    let mut text = String::new();
    match zip.by_name("org/apache/maven/model/pom-4.0.0.xml") {
        Ok(mut f) => f.read_to_string(&mut text)?,
        Err(_) => return Ok(None),
    };
    let doc = roxmltree::Document::parse(&text).context("Maven's super POM is not XML")?;
    Ok(doc
        .descendants()
        .filter(|n| n.has_tag_name("repository"))
        .find(|r| {
            r.children()
                .any(|c| c.has_tag_name("id") && c.text() == Some("central"))
        })
        .and_then(|r| r.children().find(|c| c.has_tag_name("url")))
        .and_then(|u| u.text())
        .map(|t| t.trim().to_string()))
}

/// The repository's base URL, ending in `/`.
pub fn repository() -> Result<String> {
    super::base_url(
        "DBDELTA_MAVEN_REPOSITORY",
        configured_repository,
        "Maven repository",
    )
}

/// What Maven's configuration says: a settings mirror of `central`, else the super POM's.
fn configured_repository() -> Result<Option<String>> {
    let home = maven_home();
    let user = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".m2").join("settings.xml"));
    for settings in user
        .into_iter()
        .chain(home.iter().map(|h| h.join("conf").join("settings.xml")))
    {
        if let Some(u) = mirror_in(&settings)? {
            return Ok(Some(u));
        }
    }
    let Some(home) = home else {
        bail!(
            "finding the Maven repository: install Maven (apt-get install maven; its settings' mirrors or its built-in central repository are used) or set DBDELTA_MAVEN_REPOSITORY"
        );
    };
    super_pom_central(&home)
}

/// `group/as/path/artifact/`.
fn artifact_dir(group: &str, artifact: &str) -> Result<String> {
    Ok(format!(
        "{}{}/{artifact}/",
        repository()?,
        group.replace('.', "/")
    ))
}

/// The versions `maven-metadata.xml` lists, in its order.
pub fn versions(group: &str, artifact: &str) -> Result<Vec<String>> {
    let url = format!("{}maven-metadata.xml", artifact_dir(group, artifact)?);
    let body = super::get_bytes(&url, "application/xml", 4 << 20)
        .with_context(|| format!("reading the metadata of {group}:{artifact}"))?;
    parse_versions(&String::from_utf8_lossy(&body))
        .with_context(|| format!("{url} is not Maven metadata"))
}

fn parse_versions(xml: &str) -> Result<Vec<String>> {
    let doc = roxmltree::Document::parse(xml)?;
    Ok(doc
        .descendants()
        .filter(|n| n.has_tag_name("versions"))
        .flat_map(|vs| vs.children().filter(|c| c.has_tag_name("version")))
        .filter_map(|v| v.text().map(|t| t.trim().to_string()))
        .collect())
}

/// The jar of one version and the repository's SHA-1 of it.
pub fn locate(group: &str, artifact: &str, version: &str) -> Result<Artifact> {
    let url = format!(
        "{}{version}/{artifact}-{version}.jar",
        artifact_dir(group, artifact)?
    );
    let sha1 = super::get_bytes(&format!("{url}.sha1"), "text/plain", 4096)
        .with_context(|| format!("reading the checksum of {group}:{artifact}:{version}"))?;
    let hex = String::from_utf8_lossy(&sha1);
    let hex = hex.split_whitespace().next().unwrap_or("");
    let digest = decode_hex(hex)
        .filter(|d| d.len() == 20)
        .with_context(|| format!("{url}.sha1 holds no SHA-1 ({hex:?})"))?;
    Ok(Artifact {
        url,
        checksum: Checksum::Sha1(digest),
        unpacked: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_patterns() {
        assert!(mirrors_central("*") && mirrors_central("central"));
        assert!(mirrors_central("external:*") && mirrors_central("foo, central"));
        assert!(!mirrors_central("*,!central") && !mirrors_central("repositoryId"));
    }

    #[test]
    fn a_settings_mirror_of_central_wins() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.xml");
        std::fs::write(
            &settings,
            r#"<settings><mirrors>
                 <mirror><id>a</id><mirrorOf>other</mirrorOf><url>https://a.example/</url></mirror>
                 <mirror><id>b</id><mirrorOf>*,!snapshots</mirrorOf><url> https://b.example/m2 </url></mirror>
               </mirrors></settings>"#,
        )
        .unwrap();
        assert_eq!(
            mirror_in(&settings).unwrap().as_deref(),
            Some("https://b.example/m2")
        );
        assert_eq!(mirror_in(&dir.path().join("none.xml")).unwrap(), None);
    }

    #[test]
    fn metadata_versions_in_order() {
        let xml = "<metadata><groupId>g</groupId><versioning><latest>2</latest>\
                   <versions><version>10.2.11</version><version>11.4.5</version></versions>\
                   </versioning></metadata>";
        assert_eq!(parse_versions(xml).unwrap(), ["10.2.11", "11.4.5"]);
    }
}
