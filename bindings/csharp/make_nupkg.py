"""Builds the C# assembly with Mono's mcs and packs it with the native C API library into a
NuGet package (a zip in NuGet's layout):

    <id>.nuspec
    lib/net45/Cntk.Core.Managed.dll             (mcs builds .NET Framework 4.x assemblies)
    runtimes/linux-x64/native/libcntk_c.so
    [Content_Types].xml, _rels/.rels

Usage: python3 bindings/csharp/make_nupkg.py <libcntk_c.so> <output folder>
Prints the path of the .nupkg. `make nupkg` runs it over the make dev build.
"""
import os
import re
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
PACKAGE_ID = 'OpenCNTK.CPUOnly'


def version():
    with open(os.path.join(ROOT, 'CMakeLists.txt')) as f:
        return re.search(r'project\(OpenCNTK VERSION ([\d.]+)', f.read()).group(1)


def build_assembly(out_dir):
    sources = sorted(os.path.join(HERE, 'src', f) for f in os.listdir(os.path.join(HERE, 'src')) if f.endswith('.cs'))
    dll = os.path.join(out_dir, 'Cntk.Core.Managed.dll')
    subprocess.run(['mcs', '-nologo', '-target:library', '-optimize+', '-out:' + dll, '-r:System.Core'] + sources,
                   check=True)
    return dll


NUSPEC = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd">
  <metadata>
    <id>{id}</id>
    <version>{version}</version>
    <authors>OpenCNTK</authors>
    <license type="expression">MIT</license>
    <description>OpenCNTK's C# API: CNTK 2.7's CNTK namespace (CNTKLib, Function, Variable, Value, Trainer, ...) over OpenCNTK's C API, for Linux x64 on the CPU.</description>
    <tags>CNTK deep-learning neural-networks</tags>
  </metadata>
</package>
"""

CONTENT_TYPES = """<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
  <Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml" />
  <Default Extension="nuspec" ContentType="application/octet" />
  <Default Extension="dll" ContentType="application/octet" />
  <Default Extension="so" ContentType="application/octet" />
</Types>
"""

RELS = """<?xml version="1.0" encoding="utf-8"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
  <Relationship Type="http://schemas.microsoft.com/packaging/2010/07/manifest" Target="/{id}.nuspec" Id="R1" />
</Relationships>
"""


def pack(native_library, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    dll = build_assembly(out_dir)
    v = version()
    path = os.path.join(out_dir, '%s.%s.nupkg' % (PACKAGE_ID, v))
    with zipfile.ZipFile(path + '.tmp', 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('%s.nuspec' % PACKAGE_ID, NUSPEC.format(id=PACKAGE_ID, version=v))
        z.writestr('[Content_Types].xml', CONTENT_TYPES)
        z.writestr('_rels/.rels', RELS.format(id=PACKAGE_ID))
        z.write(dll, 'lib/net45/Cntk.Core.Managed.dll')
        z.write(native_library, 'runtimes/linux-x64/native/libcntk_c.so')
    os.replace(path + '.tmp', path)
    return path


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(pack(sys.argv[1], sys.argv[2]))
