/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/capabilities-core.test.ts > TAP > the DOT of the test fixture > DOT 1`] = `
digraph "capabilities" {
  rankdir = "LR";
  fontname = "Helvetica";
  edge [
    fontname = "Helvetica";
    fontsize = 10;
  ];
  node [
    fontname = "Helvetica";
  ];
  subgraph "cluster_provider" {
    label = "Providers";
    style = "rounded";
    color = "gray";
    "provider:huabu" [
      label = "huabu";
      shape = "component";
    ];
    "provider:mac-a" [
      label = "mac-a";
      shape = "component";
    ];
    "provider:mac-b" [
      label = "mac-b";
      shape = "component";
    ];
  }
  subgraph "cluster_resource" {
    label = "Resources";
    style = "rounded";
    color = "gray";
    "resource:huabu-access" [
      label = "Huabu access\\nhuabu-access";
      shape = "box";
      style = "rounded";
    ];
    "resource:local-git" [
      label = "Git\\nlocal-git";
      shape = "box";
      style = "rounded";
    ];
    "resource:local-resource-management" [
      label = "Local resource management\\nlocal-resource-management";
      shape = "box";
      style = "rounded";
    ];
    "resource:other-git" [
      label = "Git\\nother-git";
      shape = "box";
      style = "rounded";
      color = "orange";
    ];
    "resource:web-search" [
      label = "Web search\\nweb-search";
      shape = "box";
      style = "rounded";
    ];
  }
  subgraph "cluster_agent" {
    label = "Agents";
    style = "rounded";
    color = "gray";
    "agent:prf-reviewer" [
      label = "Reviewer\\nprf-reviewer";
      shape = "ellipse";
    ];
    "agent:prf-writer" [
      label = "Writer\\nprf-writer";
      shape = "ellipse";
    ];
  }
  "agent:prf-reviewer" -> "provider:mac-a" [
    label = "placed-on";
    style = "dotted";
  ];
  "agent:prf-reviewer" -> "resource:local-git" [
    label = "selects";
  ];
  "agent:prf-reviewer" -> "resource:web-search" [
    label = "selects";
  ];
  "agent:prf-writer" -> "provider:mac-b" [
    label = "placed-on";
    style = "dotted";
  ];
  "agent:prf-writer" -> "resource:other-git" [
    label = "selects";
  ];
  "provider:huabu" -> "resource:huabu-access" [
    label = "publishes";
  ];
  "provider:huabu" -> "resource:local-resource-management" [
    label = "publishes";
  ];
  "provider:huabu" -> "resource:web-search" [
    label = "publishes";
  ];
  "provider:huabu" -> "resource:huabu-access" [
    label = "requires";
    style = "dashed";
  ];
  "provider:huabu" -> "resource:local-resource-management" [
    label = "requires";
    style = "dashed";
  ];
  "provider:mac-a" -> "resource:local-git" [
    label = "publishes";
  ];
  "provider:mac-b" -> "resource:other-git" [
    label = "publishes";
  ];
}

`
