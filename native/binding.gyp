# libbpf: set LIBBPF_A to a libbpf.a built with -fPIC to link it statically (Debian's
# /usr/lib/x86_64-linux-gnu/libbpf.a is not position independent and cannot go into a .node);
# without it the addon links the system libbpf.so.1.
{
  "targets": [
    {
      "target_name": "ebpf_studio",
      "sources": [
        "src/module.cc",
        "src/errors.cc",
        "src/args.cc",
        "src/object.cc",
        "src/attach.cc",
        "src/maps.cc",
        "src/byid.cc",
        "src/ringbuf.cc",
        "src/unwind.cc",
        "src/asuser.cc"
      ],
      "dependencies": ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      "defines": ["NAPI_VERSION=8", "NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED"],
      "cflags!": ["-fno-exceptions", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-O3"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O2"],
      "variables": {
        "libbpf_a": "<!(node -p \"process.env.LIBBPF_A || ''\")"
      },
      "conditions": [
        ["libbpf_a!=''", {
          "libraries": ["<(libbpf_a)", "-ldw", "-lelf", "-lz"],
          "ldflags": ["-Wl,--exclude-libs,ALL"]
        }, {"libraries": ["-lbpf", "-ldw", "-lelf", "-lz"]}]
      ]
    },
    {
      "target_name": "ebpf-studio-launch",
      "type": "executable",
      "sources": ["src/launch.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
