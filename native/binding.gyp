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
        "src/ringbuf.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "dependencies": ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      "defines": ["NAPI_VERSION=8", "NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED"],
      "cflags!": ["-fno-exceptions", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-O3"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O2"],
      "libraries": ["-l:libbpf.a", "-lelf", "-lz"]
    },
    {
      "target_name": "ebpf-studio-launch",
      "type": "executable",
      "sources": ["src/launch.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
