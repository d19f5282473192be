// Command distpack packs one release archive of spbridge reproducibly: the
// same files and the same time give the same bytes (entries sorted, fixed
// times and owners, no compressor timestamps). scripts/dist runs it.
//
//	go run ./scripts/distpack -o OUT.tar.gz|OUT.zip -mtime UNIX -prefix DIR FILE...
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "the archive to write (.tar.gz or .zip)")
	mtime := flag.Int64("mtime", 0, "the time every entry carries, in Unix seconds")
	prefix := flag.String("prefix", "", "the folder every entry is put in")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: distpack -o OUT.tar.gz|OUT.zip -mtime UNIX -prefix DIR FILE...")
		os.Exit(2)
	}
	if err := pack(*out, time.Unix(*mtime, 0).UTC(), *prefix, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "distpack:", err)
		os.Exit(1)
	}
}

func pack(out string, mtime time.Time, prefix string, files []string) (err error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	switch {
	case strings.HasSuffix(out, ".tar.gz"):
		return packTar(f, mtime, prefix, files)
	case strings.HasSuffix(out, ".zip"):
		return packZip(f, mtime, prefix, files)
	}
	return errors.New("the archive must end in .tar.gz or .zip")
}

// mode is an entry's mode: executables (the spbridge binary) 0755, the rest
// 0644.
func mode(name string) int64 {
	if b := filepath.Base(name); b == "spbridge" || b == "spbridge.exe" {
		return 0o755
	}
	return 0o644
}

func packTar(w io.Writer, mtime time.Time, prefix string, files []string) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Name: prefix + "/" + filepath.Base(name), Mode: mode(name), Size: int64(len(data)),
			ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX,
			Uname: "root", Gname: "root",
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func packZip(w io.Writer, mtime time.Time, prefix string, files []string) error {
	zw := zip.NewWriter(w)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: prefix + "/" + filepath.Base(name), Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(os.FileMode(mode(name)))
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}
